#!/usr/bin/env bash
# The sidecar's side of the two-VM network-cut test (tests/vm/net-cut-vms.sh).
# Runs INSIDE the `--wire listen` VM, after guest-setup.sh put rxe0 on the
# cable: a master Redis with KEYS keys and rdma-server over verbs on the
# cable's address, both kept up until the client side is done.
#
#   bash tests/vm/net-cut-peer.sh BUILD_DIR SHARED_DIR KEYS
#
# SHARED_DIR (on the shared /tmp) carries everything between the two VMs:
#   in:  secret       the sidecar's shared secret
#        done         the client side has finished (any content)
#   out: ready        "sidecar=ADDR:PORT master=ADDR:PORT digest=HEX keys=N"
#        peer.log     redis and rdma-server output
#        peer-status  "ok" if the sidecar was still up when the client side
#                     finished, else what went wrong
# Exit status: 0 when peer-status is ok.
set -uo pipefail
build=${1:?usage: net-cut-peer.sh BUILD_DIR SHARED_DIR KEYS}
shared=${2:?usage: net-cut-peer.sh BUILD_DIR SHARED_DIR KEYS}
keys=${3:?usage: net-cut-peer.sh BUILD_DIR SHARED_DIR KEYS}
addr=${RRS_VERBS_ADDR:?run me through tests/vm/run-in-vm.sh --wire listen:PORT}
redis_port=6390
sidecar_port=12345
# The client side gives up long before this (its own VM's --timeout).
done_timeout=${RRS_NET_CUT_PEER_TIMEOUT:-1500}

log=$shared/peer.log
finish() { echo "$1" >"$shared/peer-status"; echo "net-cut-peer: $1" >&2; }

work=$(mktemp -d /tmp/rrs-net-cut-peer.XXXXXX)
redis-server --port $redis_port --bind "127.0.0.1 $addr" --protected-mode no --save '' \
  --appendonly no --dir "$work" --enable-debug-command local --daemonize no >>"$log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p $redis_port ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p $redis_port DEBUG POPULATE "$keys" k 200 >/dev/null
digest=$(redis-cli -p $redis_port DEBUG DIGEST 2>&1)
# redis-cli exits 0 on an error reply: check what the master holds.
[ "$(redis-cli -p $redis_port DBSIZE 2>&1)" = "$keys" ] && [[ $digest =~ ^[0-9a-f]{40}$ ]] ||
  { finish "the master did not start with $keys keys (digest '$digest'; see $log)"; kill $redis_pid; exit 1; }

RDMA_SIDECAR_SECRET=$(cat "$shared/secret") "$build/server/rdma-server" \
  --redis 127.0.0.1:$redis_port --listen "$addr" --port $sidecar_port --transport verbs --snapshot-at-start \
  >>"$log" 2>&1 &
sidecar_pid=$!
deadline=$((SECONDS + 120))
until grep -q '^ready' "$log" 2>/dev/null; do
  if ! kill -0 $sidecar_pid 2>/dev/null || [ $SECONDS -ge $deadline ]; then
    finish "rdma-server did not get ready (see $log)"; kill $redis_pid; exit 1
  fi
  sleep 0.2
done
echo "sidecar=$addr:$sidecar_port master=$addr:$redis_port digest=$digest keys=$keys" \
  >"$shared/ready.tmp" && mv "$shared/ready.tmp" "$shared/ready"
echo "net-cut-peer: ready: $(cat "$shared/ready")" >&2

deadline=$((SECONDS + done_timeout))
until [ -e "$shared/done" ] || [ $SECONDS -ge $deadline ]; do sleep 0.5; done
if [ ! -e "$shared/done" ]; then
  finish "the client side did not finish within ${done_timeout}s"
elif ! kill -0 $sidecar_pid 2>/dev/null; then
  finish "rdma-server exited while clients were cut off (see $log)"
else
  finish ok
fi
kill $sidecar_pid $redis_pid 2>/dev/null
wait
rm -rf "$work"
[ "$(cat "$shared/peer-status")" = ok ]
