#!/usr/bin/env bash
# A quick A/B of two rdma-client binaries in restore mode: one Redis master
# loaded by gen_dataset, one rdma-server (TCP), and per run each client into
# a fresh empty target, one after the other. Prints each run's wall time and
# the target's CPU (utime + stime from /proc/<pid>/stat, in clock ticks of
# 10 ms), which a busy machine disturbs less than wall time.
#   bash bench/restore_ab.sh OLD_CLIENT NEW_CLIENT [KEYS] [VALUE_SIZE] [RUNS]
# Needs a Release build in build/ (bash bench/run.sh builds one) for
# rdma-server and gen_dataset, and redis-server/redis-cli on PATH. Uses
# ports 47001, 47002 and 47100 on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: restore_ab.sh OLD_CLIENT NEW_CLIENT [KEYS] [VALUE_SIZE] [RUNS]}
new=${2:?usage: restore_ab.sh OLD_CLIENT NEW_CLIENT [KEYS] [VALUE_SIZE] [RUNS]}
keys=${3:-300000} vsize=${4:-16} runs=${5:-3}
dir=$(mktemp -d)
spid=""
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  redis-cli -p 47001 shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p 47002 shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

redis-server --port 47001 --save '' --appendonly no --daemonize yes --dir "$dir" --logfile "$dir/m.log"
sleep 0.5
build/bench/gen_dataset --redis 127.0.0.1:47001 --keys "$keys" --value-size "$vsize" >/dev/null
build/server/rdma-server --redis 127.0.0.1:47001 --listen 127.0.0.1 --port 47100 --transport tcp --snapshot-at-start \
  >"$dir/server.log" 2>&1 &
spid=$!
for _ in $(seq 120); do grep -q ready "$dir/server.log" && break; sleep 0.5; done
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for r in $(seq "$runs"); do
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    redis-server --port 47002 --save '' --appendonly no --daemonize yes --dir "$dir" \
      --logfile "$dir/t.log"
    sleep 0.3
    tpid=$(redis-cli -p 47002 info server | awk -F: '/^process_id/{print $2}' | tr -d '\r')
    c0=$(cpu_ticks "$tpid")
    t0=$(date +%s.%N)
    "$bin" 127.0.0.1 47100 --redis 127.0.0.1:47002 --transport tcp >/dev/null 2>"$dir/client.log" ||
      { echo "$which: rdma-client failed:" >&2; tail -3 "$dir/client.log" >&2; }
    t1=$(date +%s.%N)
    c1=$(cpu_ticks "$tpid")
    echo "$which run $r: wall $(echo "$t1 - $t0" | bc) s, target cpu $(((c1 - c0) * 10)) ms," \
      "keys $(redis-cli -p 47002 dbsize)"
    redis-cli -p 47002 shutdown nosave >/dev/null 2>&1 || true
    sleep 0.3
  done
done
