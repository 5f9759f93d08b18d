#!/usr/bin/env bash
# The main job end to end on a built-in default: a master Redis with sample
# data, rdma-server beside it, an empty replica Redis, and rdma-client making
# it a replica (--mode replica: the table streamed to it as an RDB), catching
# it up from the change log while the master takes writes, and handing it to
# the master (--handoff: a partial resync). Prints each step, how long it
# took, and whether the replica holds what the master holds (rdma-client
# --verify, key by key, and the function libraries).
# Everything runs on loopback and is stopped on exit.
# Usage: bash bench/demo.sh [--keys N] [--value-size BYTES] [--bin-dir DIR]
#                           [--listen ADDR] [--transport auto|tcp|verbs]
# --bin-dir: run DIR/rdma-server and DIR/rdma-client (installed ones, e.g.
# /usr/bin from the .deb) instead of building; the sample data then comes
# from DEBUG POPULATE. --listen: the sidecar serves on ADDR (an RDMA
# device's address for verbs) with a fresh shared secret.
set -euo pipefail
cd "$(dirname "$0")/.."

keys=200000
value_size=1000
bin_dir=""
listen=127.0.0.1
transport=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --keys) keys=$2; shift 2 ;;
    --value-size) value_size=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --listen) listen=$2; shift 2 ;;
    --transport) transport=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }
step() { printf '\n== %s\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ -n "$bin_dir" ]; then
  server_bin=$bin_dir/rdma-server client_bin=$bin_dir/rdma-client
  step "using the installed $server_bin and $client_bin"
  "$server_bin" --version
else
  step "installing dependencies and building (Release)"
  t=$(now)
  bash tests/install-deps.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build --target rdma-server rdma-client gen_dataset | grep -E "error|FAILED" || true
  echo "built in $(since "$t")"
  server_bin=build/server/rdma-server client_bin=build/client/rdma-client
fi

work=$(mktemp -d /tmp/rdma-sync-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

start_redis() {  # name port
  mkdir -p "$work/$1"
  redis-server --port "$2" --bind 127.0.0.1 --dir "$work/$1" --save '' --appendonly no \
    --enable-debug-command yes --repl-diskless-sync-delay 0 --logfile "$work/$1/redis.log" &
  pids+=($!)
  for _ in $(seq 100); do redis-cli -p "$2" ping >/dev/null 2>&1 && return; sleep 0.05; done
  echo "demo: redis-server on port $2 did not start; see $work/$1/redis.log" >&2
  exit 1
}

master=$(free_port); replica=$(free_port); sidecar=$(free_port)
what="random bytes"
[ -z "$bin_dir" ] || what="bytes (DEBUG POPULATE: zero-padded)"
step "master Redis on 127.0.0.1:$master with $keys keys x $value_size $what, plus every other type"
start_redis master "$master"
t=$(now)
if [ -n "$bin_dir" ]; then
  redis-cli -p "$master" debug populate "$keys" key "$value_size" >/dev/null
else
  build/bench/gen_dataset --redis "127.0.0.1:$master" --keys "$keys" --value-size "$value_size" >/dev/null
fi
r() { redis-cli -p "$master" "$@" >/dev/null; }
r HSET user:1 name Ada lang C++ ; r RPUSH queue a b c d ; r SADD tags red green blue
r ZADD board 1 alice 2 bob +inf top -inf bottom ; r XADD events '*' type login user 1
r XGROUP CREATE events workers 0 ; r XREADGROUP GROUP workers w1 COUNT 1 STREAMS events '>'
r PFADD visitors a b c ; r SETBIT flags 7 1 ; r GEOADD places 13.36 38.11 palermo
r SET session:1 token PX 3600000 ; r -n 2 SET other-db value
r FUNCTION LOAD "#!lua name=demo
redis.register_function('hello', function() return 'hello' end)"
echo "loaded in $(since "$t"): $(redis-cli -p "$master" info keyspace | grep '^db' | tr '\r\n' '  ')"

# Off loopback the sidecar serves only clients that hold its shared secret.
secret_args=()
if [ "$listen" != 127.0.0.1 ]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secret"
  chmod 600 "$work/secret"
  secret_args=(--auth-file "$work/secret")
fi
step "rdma-server starts beside the master on $listen:$sidecar: no snapshot (no fork of the master) until a client asks"
t=$(now)
# --snapshot-delay 0: one replica here, nobody to gather (default 3 s).
"$server_bin" --redis "127.0.0.1:$master" --listen "$listen" --port "$sidecar" --transport "$transport" \
  --snapshot-delay 0 "${secret_args[@]}" >"$work/server.out" 2>"$work/server.err" &
pids+=($!)
until grep -q ready "$work/server.out" 2>/dev/null; do
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/server.err" >&2; exit 1; }
  sleep 0.05
done
echo "$(grep ready "$work/server.out")"
echo "serving in $(since "$t")"

writes() {  # prefix count: SET and INCR pairs, piped to the master
  for i in $(seq 1 "$2"); do printf 'SET %s:%d value-%d\r\nINCR counter\r\n' "$1" "$i" "$i"; done |
    redis-cli -p "$master" --pipe >/dev/null
}
synced_counts() { redis-cli -p "$master" info stats | grep -E '^sync_(full|partial_ok):' | tr -d '\r' | tr '\n' ' '; }

step "empty replica Redis on 127.0.0.1:$replica (repl-diskless-load swapdb); rdma-client --mode replica --handoff, with writes on the master"
echo "rdma-client asks for the table: rdma-server takes the master's own full sync (PSYNC) and parses"
echo "the RDB into its table; the replica becomes a replica of rdma-client, loads the table as an RDB"
echo "streamed from it, catches up from the sidecar's change log, then is handed to the master (partial resync)"
start_redis replica "$replica"
redis-cli -p "$replica" config set repl-diskless-load swapdb >/dev/null
before=$(synced_counts)
writes during 20000 &
writer=$!
t=$(now)
"$client_bin" "$listen" "$sidecar" --redis "127.0.0.1:$replica" --mode replica \
  --transport "$transport" "${secret_args[@]}" --handoff --master "127.0.0.1:$master" --quiet >"$work/client.out" 2>"$work/client.err" ||
  { echo "demo: rdma-client exited $?" >&2; cat "$work/client.err" >&2; exit 1; }
grep '^published' "$work/server.out"
grep -E '^(synced|stopped|handoff)' "$work/client.out"
echo "snapshot, full sync, catch-up and handoff took $(since "$t") (wall, including process start)"
wait "$writer"
echo "master INFO stats before: $before"
echo "master INFO stats after:  $(synced_counts)"

step "more writes, now carried by native replication"
t=$(now)
writes after 20000
printf 'MULTI\r\nHSET user:1 lang Rust\r\nLPUSH queue e\r\nEXEC\r\nDEL session:1\r\n' |
  redis-cli -p "$master" --pipe >/dev/null
until [ "$(redis-cli -p "$master" debug digest)" = "$(redis-cli -p "$replica" debug digest)" ]; do
  sleep 0.05
  [ "$(since "$t" | cut -d. -f1)" -lt 60 ] || { echo "demo: the replica did not catch up" >&2; exit 1; }
done
echo "replica caught up $(since "$t") after the first write"
redis-cli -p "$replica" info replication | grep -E '^(role|master_port|master_link_status|master_repl_offset)' | tr -d '\r'

step "verify: rdma-client --verify compares every key (type, value, TTL, field TTLs) and every function library of the replica with the master's"
rc=0
"$client_bin" --verify --source-redis "127.0.0.1:$master" --redis "127.0.0.1:$replica" --quiet || rc=$?
case $rc in
  0) ;;
  1) echo "MISMATCH: rdma-client --verify found differences (above)" >&2; exit 1 ;;
  *) echo "demo: rdma-client --verify could not compare (exit $rc)" >&2; exit "$rc" ;;
esac
# --verify compares keys; the function libraries are compared here.
mf=$(redis-cli -p "$master" function list withcode | md5sum); sf=$(redis-cli -p "$replica" function list withcode | md5sum)
if [ "$mf" != "$sf" ]; then
  echo "MISMATCH: the function libraries differ" >&2; exit 1
fi
echo "the replica is a real replica of the master, with the same keys and function libraries"
