#!/usr/bin/env bash
# The Soft-RoCE suite. Runs INSIDE the VM, after guest-setup.sh brought up
# rxe0 and exported RRS_VERBS_ADDR:
#
#   bash tests/vm/run-in-vm.sh --timeout 1800 -- bash tests/vm/verbs-suite.sh [build-dir]
#
# The verbs half of the transport conformance suite, the per-client
# protection and the hostile-peer tests, then the end-to-end tests
# of the shipped binaries over verbs (RRS_TEST_TRANSPORT=verbs): every type,
# TTLs, DBs, big values, digests equal; auth and the shared secret;
# four clients at once; a sidecar killed mid-transfer (and --atomic); the
# master and the target killed mid-transfer; psync tables; follow mode;
# replica mode and handoff; the soak; the .deb installed and the demo run
# with its binaries (deb-demo.sh).
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
  local t0=$SECONDS
  timeout 900 "$@" --gtest_brief=1 || failed+=("$(basename "$1")")
  echo "   ($((SECONDS - t0)) s)"
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
for t in sync_test auth_test; do
  run "$build/tests/integration/$t"
done
# The transport's half of the fault tests: clients at once, a sidecar killed
# mid-transfer (with and without --atomic: two kills each here, five over TCP
# on the host), a corrupt record re-read, a stalled target. What the target
# side does (policies, staging, refusals) is the same over either transport
# and runs over TCP on the host only.
run "$build/tests/integration/fault_test" --gtest_filter='-*ScanSourceCannotDump*'
RRS_KILL_ITERATIONS=2 run "$build/tests/integration/atomic_test" \
  --gtest_filter='KilledSidecarTest.AtomicLeaves*:KilledSidecarTest.WithoutAtomic*'

# Snapshots on demand over verbs: the first client waits for the table, two
# share one fork, a follower goes on after the table is given back, and the
# handoff from a table taken for its client.
run "$build/tests/integration/on_demand_test" \
  --gtest_filter='*NoForkUntilAClient*:*ShareOneFork:*GivenBackWhileTheLogGoesOn:*HandoffFromATableTakenOnDemand'
# A psync table over verbs, and a later epoch published after a full resync.
run "$build/tests/integration/psync_source_test" \
  --gtest_filter='*EveryTypeAndTheMastersReplicationPosition:*FullResyncOnReconnectPublishesANewEpoch'
# The target killed mid-load in restore and replica mode, with the client
# reading over verbs. (A master killed mid-snapshot never reaches the
# transport, and the link cuts need the sidecar in a network namespace of
# its own: both run over TCP on the host.)
run "$build/tests/integration/net_fault_test" --gtest_filter='*TargetKillTest*'
# Follow mode: the change log read with one-sided READs under a writer,
# overrun, a new epoch of the same history and a new history, a sidecar
# restart, a flipped log byte. (What the follower does with what it read,
# TTLs, stalls, refusals, is the same over either transport: TCP on the host.)
run "$build/tests/integration/follow_test" --gtest_filter='*EveryWriteType*:*TinyRing*:*SameHistory*:*SidecarRestarted*:*NewHistory*:*CorruptLog*'

# Replica mode: the table as an RDB down a replica link, the log forwarded
# verbatim, and the handoff to the master with a partial resync.
run "$build/tests/integration/replica_mode_test"
# Redis Cluster: every source shard's table read over verbs into target
# clusters of other layouts (the rest of cluster_sync_test is about the
# target side, the same over either transport: TCP on the host covers it).
run "$build/tests/integration/cluster_sync_test" --gtest_filter='*ThreeShardsIntoFour*'
# And followed: each shard's change log read over verbs, its stream routed
# by slot into four masters under a writer.
run "$build/tests/integration/cluster_follow_test" --gtest_filter='*ThreeShardsFollowed*'
# rdma-server's /metrics with a verbs client connected and following.
run "$build/tests/integration/metrics_endpoint_test" --gtest_filter='*DuringSyncAndFollow*'
# The package as an operator gets it: the .deb built (cpack) and installed
# in the guest (dpkg -i, into the throw-away overlay), its units verified,
# and bench/demo.sh run with /usr/bin's binaries over verbs.
echo "== tests/vm/deb-demo.sh"
t0=$SECONDS
timeout 900 bash tests/vm/deb-demo.sh "$build" || failed+=("deb-demo.sh")
echo "   ($((SECONDS - t0)) s)"
# The same package's systemd units run by systemd need a guest booted with
# systemd as init: tests/run.sh runs units-under-systemd.sh in a VM of its
# own (run-in-vm.sh --systemd).
# The soak, shorter: sidecar, targets and master link failing at random
# under a writer, followers in both modes, a handoff at the end.
export RRS_SOAK_SECONDS=40
run "$build/tests/integration/soak_test"

if [ ${#failed[@]} -gt 0 ]; then
  echo "verbs-suite: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "verbs-suite: all passed"
