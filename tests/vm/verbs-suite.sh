#!/usr/bin/env bash
# The Soft-RoCE suite. Runs INSIDE the VM, after guest-setup.sh brought up
# rxe0 and exported RRS_VERBS_ADDR:
#
#   bash tests/vm/run-in-vm.sh --timeout 1800 -- bash tests/vm/verbs-suite.sh [build-dir]
#
# The verbs half of the transport conformance suite, the per-client
# protection and the hostile-peer tests, then the end-to-end tests of the
# shipped binaries over verbs (RRS_TEST_TRANSPORT=verbs) where the transport
# is under test: every type, digests equal; the shared secret; clients
# loading while the table is built; four clients
# at once; a sidecar and a target killed mid-transfer; snapshots on demand;
# psync tables; follow mode; replica mode and handoff; a cluster followed;
# the soak. Each test binary's cases the transport plays no part in run over
# TCP on the host only (ctest).
# RRS_REQUIRE_VERBS=1 turns "no RDMA device" skips into failures: here a skip
# would hide a broken setup.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
export RRS_TEST_TRANSPORT=verbs RRS_REQUIRE_VERBS=1
: "${RRS_VERBS_ADDR:?run me through tests/vm/run-in-vm.sh (guest-setup.sh sets RRS_VERBS_ADDR)}"

failed=()
run() {
  echo "== $*"
  local t0=$SECONDS json
  json="${TMPDIR:-/tmp}/verbs-suite-$(basename "$1").json"
  timeout 900 "$@" --gtest_brief=1 --gtest_output="json:$json" || failed+=("$(basename "$1")")
  echo "   ($((SECONDS - t0)) s)"
  slowest "$json"
}

# The binary's slowest cases (5 s or more), so that a slow lane shows where
# its time went; --gtest_brief prints no times.
slowest() {
  [ -f "$1" ] && command -v python3 >/dev/null || return 0
  python3 - "$1" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
cases = [(float(case["time"].rstrip("s")), suite["name"] + "." + case["name"])
         for suite in report["testsuites"] for case in suite["testsuite"]]
for seconds, name in sorted(cases, reverse=True)[:4]:
    if seconds >= 5:
        print(f"   {seconds:5.0f} s  {name}")
EOF
}

run "$build/tests/transport/transport_conformance_test" --gtest_filter='*/verbs'
# Per-client rkeys: memory windows, and a protection domain per client (the
# fallback, forced with rdma-server's test hook); the READ depth granted.
run "$build/tests/transport/verbs_protection_test"
# The fallback's registrations run off the event loop: others are served
# meanwhile; a client gone, an epoch replaced or a stop mid-registration.
run "$build/tests/transport/verbs_registration_test"
# Hostile peers on raw rdmacm ends: bad clients of the server (malformed
# connect data, garbage instead of AUTH, a wrong proof, silence until the
# handshake timeout, a flood past --max-clients), and a lying server for the
# reader.
run "$build/tests/transport/verbs_hostile_peer_test"
run "$build/tests/transport/verbs_hostile_server_test"
# The end-to-end tests run here only where the transport is under test;
# what the target side does (TTLs, policies, staging, refusals, the cluster's
# routing) is the same over either transport and runs over TCP on the host.
# Every type over verbs, two clients of one table, the transport chosen by
# auto, an empty master, a table validated without a load.
run "$build/tests/integration/sync_test" --gtest_filter='-*KeyExpired*:*RunOnTheCpusGiven'
# The sidecar's shared secret over rdmacm, and the protection domain per
# client (the Redis passwords are the target side's).
run "$build/tests/integration/auth_test" --gtest_filter='SidecarSecretTest.*'
# A table read while it is written: growing registrations, each announced to
# the reader, which never READs past one; every load path from such a table.
run "$build/tests/transport/streamed_table_test" --gtest_filter='*/verbs'
run "$build/tests/integration/streamed_test"
# Four clients at once, a sidecar killed mid-transfer (the reader must say
# so, not hang: atomic_test's kills run over TCP on the host), a corrupt
# record re-read, and a stalled target past the verbs keepalive limit.
run "$build/tests/integration/fault_test" --gtest_filter='-*ScanSourceCannotDump*'

# Snapshots on demand over verbs: the first client waits for the table, two
# share one fork, a follower goes on after the table is given back, and the
# handoff from a table taken for its client.
run "$build/tests/integration/on_demand_test" \
  --gtest_filter='*NoForkUntilAClient*:*ShareOneFork:*GivenBackWhileTheLogGoesOn:*HandoffFromATableTakenOnDemand'
# A psync table over verbs, and a later epoch published after a full resync.
run "$build/tests/integration/psync_source_test" \
  --gtest_filter='*EveryTypeAndTheMastersReplicationPosition:*FullResyncOnReconnectPublishesANewEpoch'
# The target killed mid-load with the client reading over verbs: the reader
# torn down with READs outstanding. (Replica mode's kill differs only on the
# target's side; a master killed mid-snapshot never reaches the transport;
# the link cuts need the sidecar in a network namespace of its own: all
# three run over TCP on the host.)
run "$build/tests/integration/net_fault_test" --gtest_filter='*TargetKillTest*/Restore'
# Follow mode: the change log read with one-sided READs under a writer,
# overrun, a new epoch of the same history, a sidecar restart, a flipped log
# byte. (What the follower does with what it read, TTLs, stalls, refusals,
# a new history, is the same over either transport: TCP on the host.)
run "$build/tests/integration/follow_test" --gtest_filter='*EveryWriteType*:*TinyRing*:*SameHistory*:*SidecarRestarted*:*CorruptLog*'

# Replica mode: the table as an RDB down a replica link, the log forwarded
# verbatim, and the handoff to the master with a partial resync.
run "$build/tests/integration/replica_mode_test" \
  --gtest_filter='*EveryTypeThroughTheReplicaProtocol:*FollowForwardsTheStreamByteForByte:*HandoffContinuesWithAPartialResync'
# Redis Cluster: each source shard's table and then its change log read over
# verbs, the stream routed by slot into four masters under a writer. (The
# copies into other layouts differ only on the target's side: TCP on the
# host.)
run "$build/tests/integration/cluster_follow_test" --gtest_filter='*ThreeShardsFollowed*'
# rdma-server's /metrics with a verbs client connected and following.
run "$build/tests/integration/metrics_endpoint_test" --gtest_filter='*DuringSyncAndFollow*'
# The package (the .deb installed, its units run by systemd, the demo run
# with its binaries over verbs) needs a guest booted with systemd as init:
# tests/run.sh runs units-under-systemd.sh in a VM of its own.
# The soak, shorter: sidecar, targets and master link failing at random
# under a writer, followers in both modes, a handoff at the end.
export RRS_SOAK_SECONDS=40
run "$build/tests/integration/soak_test"

if [ ${#failed[@]} -gt 0 ]; then
  echo "verbs-suite: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "verbs-suite: all passed"
