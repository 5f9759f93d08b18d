#!/usr/bin/env bash
# What the table costs rdma-server in memory, and for how long: one master
# loaded by gen_dataset, rdma-server on demand (--snapshot-delay 0,
# --table-retain RETAIN), one rdma-client (restore mode) into an empty
# target. Prints rdma-server's resident memory (VmRSS, /proc) before any
# snapshot, with the table held once the client is done, and after the
# table was given back (`released` line), against the change log's size.
#   bash bench/table_memory.sh [KEYS] [VALUE_SIZE] [RETAIN_SECS]
# Defaults: 1,000,000 keys x 1000 random bytes (1 GB), 10 s. Needs a build
# in build/ (rdma-server, rdma-client, gen_dataset) and redis-server and
# redis-cli on PATH; uses free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000} vsize=${2:-1000} retain=${3:-10}
dir=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
master=$(free_port) target=$(free_port) sidecar=$(free_port)
spid=""
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  redis-cli -p "$master" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$target" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$(now)"; }
rss_mib() { awk '/^VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$spid/status"; }

for p in "$master" "$target"; do
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --dir "$dir" --logfile "$dir/redis-$p.log"
done
for _ in $(seq 100); do redis-cli -p "$target" ping >/dev/null 2>&1 && break; sleep 0.05; done
build/bench/gen_dataset --redis "127.0.0.1:$master" --keys "$keys" --value-size "$vsize" >/dev/null
build/server/rdma-server --redis "127.0.0.1:$master" --port "$sidecar" --transport tcp \
  --snapshot-delay 0 --table-retain "$retain" >"$dir/server.out" 2>"$dir/server.err" &
spid=$!
until grep -q '^ready' "$dir/server.out" 2>/dev/null; do
  kill -0 "$spid" 2>/dev/null || { cat "$dir/server.err" >&2; exit 1; }
  sleep 0.1
done
log_bytes=64M
echo "data: $keys keys x $vsize random bytes; rdma-server --table-retain $retain, --log-size $log_bytes"
echo "rdma-server before any snapshot: RSS $(rss_mib)"
t0=$(now)
build/client/rdma-client 127.0.0.1 "$sidecar" --redis "127.0.0.1:$target" --transport tcp --quiet \
  >"$dir/client.out"
echo "client done (snapshot + load) in $(since "$t0"): RSS with the table held $(rss_mib)," \
  "peak $(awk '/^VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$spid/status")"
t1=$(now)
until grep -q '^released' "$dir/server.out" 2>/dev/null; do sleep 0.1; done
sleep 0.5
echo "$(grep '^released' "$dir/server.out") $(since "$t1") after the client: RSS $(rss_mib)" \
  "(the change log's ring: $log_bytes, touched as the stream fills it)"
