#!/usr/bin/env bash
# Runs INSIDE the VM (verbs-suite.sh calls it): the .deb cpack builds from
# BUILD_DIR, installed with dpkg -i into the guest's throw-away overlay (the
# host's /usr and dpkg database are untouched), then bench/demo.sh against
# the installed /usr/bin/rdma-server and rdma-client, over verbs on rxe0:
#
#   bash tests/vm/run-in-vm.sh --timeout 900 -- bash tests/vm/deb-demo.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
: "${RRS_VERBS_ADDR:?run me through tests/vm/run-in-vm.sh (guest-setup.sh sets RRS_VERBS_ADDR)}"
[ -n "${RRS_VERBS_DEVICE:-}" ] ||
  { echo "deb-demo: not in the VM (no RRS_VERBS_DEVICE): dpkg -i would change this host" >&2; exit 2; }

out=$(mktemp -d /tmp/rrs-deb-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "== cpack -G DEB from $build"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log" >&2; exit 1; }
debs=("$out"/*.deb)
echo "== dpkg -i $(basename "${debs[0]}")"
# --no-triggers: man-db's index rebuild (its trigger on /usr/share/man) took
# over 3 minutes under TCG over 9p and was still running; the package itself
# is configured all the same (its postinst runs).
dpkg -i --no-triggers "${debs[0]}"
dpkg -s redis-rdma-sync | grep -E '^(Status|Version|Depends):'
for p in rdma-server rdma-client; do
  dpkg -S "/usr/bin/$p"
done
# The units run as an unprivileged DynamicUser: such a user must see the
# RDMA device too (rdma-core's udev rules make /dev/infiniband/* 0666).
ls -l /dev/infiniband
root_verbs=$(/usr/bin/rdma-server --version | grep '^verbs:')
nobody_verbs=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --no-new-privs \
  /usr/bin/rdma-server --version | grep '^verbs:')
echo "root: $root_verbs; nobody: $nobody_verbs"
[ "$root_verbs" = "$nobody_verbs" ] ||
  { echo "deb-demo: an unprivileged user does not see the RDMA device as root does" >&2; exit 1; }
# The installed units, as systemd would load them (no systemd runs here).
SYSTEMD_UNIT_PATH=/usr/lib/systemd/system: systemd-analyze verify \
  rdma-server@demo.service rdma-client@demo.service
echo "== bench/demo.sh with the installed binaries, over verbs on $RRS_VERBS_DEVICE"
bash bench/demo.sh --bin-dir /usr/bin --keys 20000 --value-size 200 \
  --listen "$RRS_VERBS_ADDR" --transport verbs
echo "deb-demo: passed"
