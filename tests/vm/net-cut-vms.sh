#!/usr/bin/env bash
# The network-cut tests over verbs: two VMs joined by a virtual cable, each
# with its own Soft-RoCE device on it. Runs on the HOST.
#
#   bash tests/vm/net-cut-vms.sh [BUILD_DIR]
#
# Why two VMs: rxe cannot serve a device in a second network namespace (its
# UDP socket lives in the initial one), and between two local addresses it
# loops packets back inside the kernel, where no veth or netfilter sees them.
# Across the cable RoCE traffic really leaves one guest for the other.
#
#   sidecar VM (--wire listen)          client VM (--wire connect)
#   master Redis + rdma-server          net_cut_test (NetCutTest):
#   on rxe0 10.78.0.1                   target Redis + rdma-client on rxe0
#   (tests/vm/net-cut-peer.sh)          10.78.0.2; cuts its end with tc
#
# Exit status: the test's; 1 if the sidecar side failed (the sidecar died
# under the cuts, say); 125 if a VM could not be brought up.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
build=${1:-build}
keys=60000   # kNetKeys in tests/integration/net_cut_test.cc
say() { echo "net-cut-vms: $*" >&2; }

command -v tc >/dev/null ||
  { say "tc not found (the guests share this root file system): apt-get install iproute2"; exit 125; }
[ -x "$build/tests/integration/net_cut_test" ] ||
  { say "no $build/tests/integration/net_cut_test: build first"; exit 125; }

shared=$(mktemp -d /tmp/rrs-net-cut.XXXXXX)
peer_pid=""
cleanup() {
  [ -n "$peer_pid" ] && kill -TERM "$peer_pid" 2>/dev/null && wait "$peer_pid"
  rm -rf "$shared"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
head -c 24 /dev/urandom | base64 >"$shared/secret"

# A free port for the cable: QEMU listens on it, the other QEMU connects.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

say "sidecar VM: listening for the cable on 127.0.0.1:$port"
bash tests/vm/run-in-vm.sh --timeout 1500 --wire "listen:$port" -- \
  bash tests/vm/net-cut-peer.sh "$build" "$shared" "$keys" > >(sed -u 's/^/[sidecar vm] /') 2>&1 &
peer_pid=$!
# The connecting QEMU fails at once if nobody listens yet.
for _ in $(seq 300); do
  ss -ltn "sport = :$port" 2>/dev/null | grep -q LISTEN && break
  kill -0 "$peer_pid" 2>/dev/null || { say "the sidecar VM exited before it listened"; exit 125; }
  sleep 0.1
done
ss -ltn "sport = :$port" | grep -q LISTEN || { say "no QEMU listening on $port after 30 s"; exit 125; }

say "client VM: connecting the cable"
RRS_TEST_TRANSPORT=verbs RRS_REQUIRE_VERBS=1 RRS_NET_CUT_PEER_DIR=$shared \
  bash tests/vm/run-in-vm.sh --timeout 1200 --wire "connect:$port" -- \
  "$build/tests/integration/net_cut_test" --gtest_output="json:$shared/result.json"
rc=$?
# A binary that ran nothing, or skipped a case, must not pass.
if [ "$rc" -eq 0 ] && ! python3 - "$shared/result.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
cases = [t for s in r["testsuites"] for t in s["testsuite"]]
ran = [t for t in cases if t.get("result") == "COMPLETED"]
sys.exit(0 if ran and len(ran) == len(cases) and r["failures"] == 0 else 1)
EOF
then
  say "the test binary passed without running every case: see its output above"
  rc=1
fi
touch "$shared/done"
wait "$peer_pid"
peer_pid=""
status=$(cat "$shared/peer-status" 2>/dev/null || echo "left no status")
if [ "$status" != ok ]; then
  say "sidecar side: $status"
  sed 's/^/[peer.log] /' "$shared/peer.log" 2>/dev/null | tail -n 40 >&2
  [ "$rc" -eq 0 ] && rc=1
elif [ "$rc" -ne 0 ]; then
  sed 's/^/[peer.log] /' "$shared/peer.log" 2>/dev/null | tail -n 40 >&2
fi
say "$([ "$rc" -eq 0 ] && echo "all passed" || echo "FAILED (exit $rc)")"
exit "$rc"
