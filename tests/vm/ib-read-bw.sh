#!/usr/bin/env bash
# The reference figure for "our RDMA READ throughput vs ib_read_bw": runs
# perftest's ib_read_bw server and client on one verbs device (loopback
# through it, as in the VM) and prints one line per run:
#
#   ib_read_bw size=1048576 iters=200 run=1 avg_MBps=31.52 peak_MBps=39.76 wall_s=10
#
#   bash tests/vm/ib-read-bw.sh [-s BYTES] [-n ITERS] [-r RUNS] [-- EXTRA ib_read_bw FLAGS]
#
# In the VM: bash tests/vm/run-in-vm.sh -- bash tests/vm/ib-read-bw.sh -s 4194304
# On a host with an HCA, set RRS_VERBS_DEVICE and RRS_VERBS_ADDR (an address
# on that device's netdev). MB/s is perftest's: 2^20 bytes per second.
set -uo pipefail

dev=${RRS_VERBS_DEVICE:-rxe0}
addr=${RRS_VERBS_ADDR:-10.77.0.1}
size=1048576
iters=200
runs=3
while [ $# -gt 0 ]; do
  case $1 in
    -s) size=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "ib-read-bw: unknown option $1" >&2; exit 2 ;;
  esac
done
# -F: do not fail when the CPU frequency cannot be read (it cannot in a VM).
flags=(-d "$dev" -s "$size" -n "$iters" -F "$@")
per_run_timeout=${RRS_BW_TIMEOUT:-120}
# perftest times with rdtsc; in the TCG VM the vCPUs' TSCs are not in sync,
# and a process that migrates mid-run can get garbage (0.00 MB/sec was seen):
# there, pin server and client to one CPU each. On a real host leave placement
# to the caller (numactl on the HCA's node).
pin_server=() pin_client=()
if grep -qw virtme_hostname /proc/cmdline 2>/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_client=(taskset -c 1)
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

status=0
for ((r = 1; r <= runs; r++)); do
  t0=$SECONDS
  # Line-buffered so that its "Waiting for client" shows once it listens;
  # a client started before that fails with "Couldn't connect".
  timeout -k 5 "$per_run_timeout" "${pin_server[@]}" stdbuf -oL ib_read_bw "${flags[@]}" \
    >"$log/server" 2>&1 &
  server=$!
  for _ in $(seq 300); do
    grep -q 'Waiting for client' "$log/server" 2>/dev/null && break
    sleep 0.1
  done
  timeout -k 5 "$per_run_timeout" "${pin_client[@]}" ib_read_bw "${flags[@]}" "$addr" >"$log/client" 2>&1
  crc=$?
  wait "$server"
  src=$?
  # The result row: bytes, iterations, peak, average, msg rate.
  b="" it="" peak="" avg=""
  read -r b it peak avg _ < <(awk -v s="$size" '$1 == s && NF >= 5' "$log/client" | tail -n 1)
  if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] || [ -z "${avg:-}" ]; then
    echo "ib_read_bw size=$size run=$r FAILED (client $crc, server $src)" >&2
    tail -n 20 "$log/client" "$log/server" >&2
    status=1
    continue
  fi
  if awk -v a="$avg" 'BEGIN { exit !(a <= 0) }'; then
    echo "ib_read_bw size=$size run=$r INVALID (perftest printed $avg MB/sec)" >&2
    status=1
    continue
  fi
  echo "ib_read_bw size=$b iters=$it run=$r avg_MBps=$avg peak_MBps=$peak wall_s=$((SECONDS - t0))"
done
exit "$status"
