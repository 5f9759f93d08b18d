#!/usr/bin/env bash
# Verbs vs TCP on one RDMA device, run where the device is: in the Soft-RoCE
# VM here (labelled "rxe, emulated"), or on a host with an HCA.
#
#   bash tests/vm/run-in-vm.sh --timeout 1500 -- bash bench/verbs_bench.sh [--keys N] [--runs N] [--chunk-mib N]
#   RRS_VERBS_ADDR=<addr on the HCA's netdev> RRS_VERBS_DEVICE=mlx5_0 bash bench/verbs_bench.sh
#
# Measures, on one data set (N keys x 1000 random bytes):
#  1. raw transfer: rdma-client --no-load over verbs and over TCP (MB/s), next
#     to perftest's ib_read_bw on the same device and message size;
#  2. sidecar CPU while 4 clients sync the same table at once, verbs vs TCP:
#     rdma-server's own CPU time (utime+stime), and the whole machine's kernel
#     CPU (system + softirq: where rxe and the TCP stack run) named separately.
# Wall times are CLOCK_MONOTONIC (python's time.monotonic; see now()).
set -euo pipefail
cd "$(dirname "$0")/.."

keys=20000
runs=5
chunk_mib=4  # rdma-client's default --chunk-size; ib_read_bw uses the same message size
build=${RRS_BUILD_DIR:-build}
while [ $# -gt 0 ]; do
  case $1 in
    --keys) keys=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --chunk-mib) chunk_mib=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "verbs_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
addr=${RRS_VERBS_ADDR:?set RRS_VERBS_ADDR (tests/vm/guest-setup.sh does)}
dev=${RRS_VERBS_DEVICE:-rxe0}
clients=4

# CLOCK_MONOTONIC seconds, from python (bash has no monotonic clock).
now() { python3 -c 'import time; print(f"{time.monotonic():.6f}")'; }
span() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }            # utime + stime
kernel_ticks() { awk '/^cpu / { print $4 + $7 + $8 }' /proc/stat; }   # system + irq + softirq
hz=$(getconf CLK_TCK)

work=$(mktemp -d /tmp/verbs-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

start_redis() {  # dir port
  mkdir -p "$work/$1"
  redis-server --port "$2" --bind 127.0.0.1 --dir "$work/$1" --save '' --appendonly no \
    --logfile "$work/$1/log" --daemonize no &
  pids+=($!)
  for _ in $(seq 200); do redis-cli -p "$2" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "verbs_bench: redis on $2 did not start" >&2; exit 1
}

# A fabric address needs the shared secret; server and client share this one.
export RDMA_SIDECAR_SECRET=${RDMA_SIDECAR_SECRET:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}
master=$(free_port); sidecar=$(free_port)
start_redis master "$master"
"$build/bench/gen_dataset" --redis "127.0.0.1:$master" --keys "$keys" --value-size 1000 >/dev/null
"$build/server/rdma-server" --redis "127.0.0.1:$master" --listen "$addr" --port "$sidecar" \
  --transport auto --snapshot-at-start >"$work/server.out" 2>"$work/server.err" &
server=$!
pids+=($server)
until grep -q ready "$work/server.out"; do
  kill -0 "$server" || { cat "$work/server.err" >&2; exit 1; }
  sleep 0.1
done
ready=$(grep ready "$work/server.out")
grep -q 'transport=tcp+verbs' <<<"$ready" || { echo "verbs_bench: server is not serving verbs: $ready" >&2; exit 1; }

echo "== raw transfer: rdma-client --no-load (verbs, tcp) and ib_read_bw ($chunk_mib MiB messages), $runs rounds after one warm-up" >&2
# Each round runs all three back to back, so a slow moment of the VM (TCG
# noise is +-15% and more) hits them alike; the share of ib_read_bw is taken
# per round, then the median of those.
declare -A raw
ratios=""
for t in verbs tcp; do
  "$build/client/rdma-client" "$addr" "$sidecar" --transport "$t" --no-load --quiet >/dev/null 2>&1
done
for ((r = 1; r <= runs; r++)); do
  for t in verbs tcp; do
    line=$("$build/client/rdma-client" "$addr" "$sidecar" --transport "$t" --no-load --quiet \
      --chunk-size "${chunk_mib}M")
    echo "$t run $r: $line" >&2
    raw[$t]+="$(sed -E 's/.*MBps=([0-9.]+).*/\1/' <<<"$line") "
  done
  # About 200 MiB per run, whatever the message size; perftest's MB is 2^20 bytes.
  bw=$(bash tests/vm/ib-read-bw.sh -s $((chunk_mib << 20)) -n $(( (200 + chunk_mib - 1) / chunk_mib )) -r 1 |
       tee /dev/stderr | sed -E 's/.*avg_MBps=([0-9.]+).*/\1/')
  bw_mb=$(awk -v m="$bw" 'BEGIN { printf "%.1f", m * 1048576 / 1e6 }')
  raw[ib]+="$bw_mb "
  v=$(tr ' ' '\n' <<<"${raw[verbs]}" | grep . | tail -n 1)
  ratios+="$(awk -v a="$v" -v b="$bw_mb" 'BEGIN { printf "%.3f", a / b }') "
done

echo "== $clients clients syncing at once" >&2
declare -A wall srv_cpu kern_cpu
for t in verbs tcp; do
  ports=()
  for ((i = 0; i < clients; i++)); do p=$(free_port); start_redis "replica-$t-$i" "$p"; ports+=("$p"); done
  s0=$(cpu_ticks "$server"); k0=$(kernel_ticks); t0=$(now)
  cpids=()
  for p in "${ports[@]}"; do
    "$build/client/rdma-client" "$addr" "$sidecar" --transport "$t" --redis "127.0.0.1:$p" --quiet \
      >"$work/client-$t-$p.out" 2>&1 &
    cpids+=($!)
  done
  for c in "${cpids[@]}"; do wait "$c" || { cat "$work"/client-"$t"-*.out >&2; exit 1; }; done
  t1=$(now); s1=$(cpu_ticks "$server"); k1=$(kernel_ticks)
  wall[$t]=$(span "$t0" "$t1")
  srv_cpu[$t]=$(awk -v d=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "%.2f", d / hz }')
  kern_cpu[$t]=$(awk -v d=$((k1 - k0)) -v hz="$hz" 'BEGIN { printf "%.2f", d / hz }')
  for p in "${ports[@]}"; do
    [ "$(redis-cli -p "$p" dbsize)" = "$keys" ] || { echo "verbs_bench: replica $p incomplete" >&2; exit 1; }
  done
  echo "$t: $clients clients in ${wall[$t]} s; rdma-server CPU ${srv_cpu[$t]} s; kernel CPU ${kern_cpu[$t]} s" >&2
done

verbs_mb=$(tr ' ' '\n' <<<"${raw[verbs]}" | grep . | median)
tcp_mb=$(tr ' ' '\n' <<<"${raw[tcp]}" | grep . | median)
ibbw_mb=$(tr ' ' '\n' <<<"${raw[ib]}" | grep . | median)
ratio=$(tr ' ' '\n' <<<"$ratios" | grep . | median | awk '{ printf "%.0f", 100 * $1 }')
emulated=$([ "$dev" = rxe0 ] && echo " (Soft-RoCE, emulated in a TCG VM: functional figures, not hardware performance)" || true)
cat <<EOF2
# Verbs vs TCP on $dev$emulated

Command: \`bash tests/vm/run-in-vm.sh --timeout 1500 -- bash bench/verbs_bench.sh --keys $keys --runs $runs --chunk-mib $chunk_mib\`
Data: $keys keys x 1000 random bytes; table $(sed -E 's/.*bytes=([0-9]+).*/\1/' <<<"$ready") bytes. MB = 10^6 bytes.

| raw transfer (median of $runs rounds) | MB/s |
|---|---:|
| rdma-client --no-load over verbs (RDMA READ, $chunk_mib MiB chunks, 8 in flight) | $verbs_mb |
| rdma-client --no-load over TCP | $tcp_mb |
| ib_read_bw, $chunk_mib MiB messages, same device | $ibbw_mb |
| verbs as a share of ib_read_bw (median of the per-round shares) | $ratio % |

| $clients clients syncing the same table at once | verbs | tcp |
|---|---:|---:|
| wall time, all done (s) | ${wall[verbs]} | ${wall[tcp]} |
| rdma-server CPU time (s) | ${srv_cpu[verbs]} | ${srv_cpu[tcp]} |
| kernel CPU, whole machine: system + softirq, where rxe and TCP run (s) | ${kern_cpu[verbs]} | ${kern_cpu[tcp]} |

Per round (MB/s): verbs ${raw[verbs]}; tcp ${raw[tcp]}; ib_read_bw ${raw[ib]}; verbs/ib_read_bw $ratios
EOF2
