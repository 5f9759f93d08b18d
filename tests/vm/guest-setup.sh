#!/usr/bin/env bash
# Runs INSIDE the test VM, as root: brings up one Soft-RoCE device (rxe0 on
# veth0, 10.77.0.1) and waits until its port is ACTIVE, then runs COMMAND with
# RRS_VERBS_ADDR / RRS_VERBS_DEVICE exported and locked memory unlimited.
#
#   bash tests/vm/guest-setup.sh [COMMAND...]
#
# Without COMMAND it only sets up and prints the variables to export.
# Idempotent: a second run in the same guest reuses veth0 and rxe0.
# Exit status: COMMAND's; 125 if setup failed (the reason is on stderr).
#
# Server and client both use 10.77.0.1 on the one rxe device: two rxe devices
# on the two veth ends hung ib_read_bw (see shared/SOFT-ROCE.md).
#
# With RRS_VM_WIRE_MAC and RRS_VM_WIRE_ADDR (run-in-vm.sh --wire), rxe0 goes
# on the NIC with that MAC, a cable to another VM, at that address instead.
set -uo pipefail

ADDR=10.77.0.1
DEV=rxe0
NETDEV=veth0
ACTIVE_TIMEOUT=${RRS_VM_ACTIVE_TIMEOUT:-60}   # seconds; TCG is slow

in_guest=""
fail() {
  echo "guest-setup: $*" >&2
  # The guest kernel's last words usually say why (module, netdev, rxe).
  [ -n "$in_guest" ] && dmesg 2>/dev/null | tail -n 15 | sed 's/^/guest-setup: dmesg: /' >&2
  exit 125
}
step() { "$@" || fail "'$*' failed (status $?)"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root inside the VM"
# Guard against running this on the host by mistake: it would add devices there.
grep -qw virtme_hostname /proc/cmdline 2>/dev/null || [ -n "${RRS_VM_FORCE_SETUP:-}" ] ||
  fail "not inside a virtme-ng guest (set RRS_VM_FORCE_SETUP=1 to set up here anyway)"
in_guest=1

# redis-server and the tests bind 127.0.0.1.
step ip link set lo up

# rdma_ucm gives /dev/infiniband/rdma_cm for librdmacm; ib_uverbs the uverbs
# nodes for libibverbs. devtmpfs creates the nodes; no udev needed.
step modprobe -a rdma_rxe ib_uverbs rdma_ucm

if [ -n "${RRS_VM_WIRE_MAC:-}" ]; then
  ADDR=${RRS_VM_WIRE_ADDR:?RRS_VM_WIRE_MAC without RRS_VM_WIRE_ADDR}
  NETDEV=$(ip -o link | awk -v mac="$RRS_VM_WIRE_MAC" 'index($0, mac) {sub(":", "", $2); print $2}')
  [ -n "$NETDEV" ] || { ip -o link >&2; fail "no NIC with MAC $RRS_VM_WIRE_MAC (the --wire cable)"; }
elif ! ip link show "$NETDEV" >/dev/null 2>&1; then
  step ip link add "$NETDEV" type veth peer name veth1
fi
ip -4 addr show dev "$NETDEV" | grep -q "inet $ADDR/" || step ip addr add "$ADDR/24" dev "$NETDEV"
# rxe's RoCE MTU follows the netdev's: 1500 gives active_mtu 1024; 9000 gives
# 4096 and ~40% more READ throughput under TCG. Opt-in: 1024 is what the
# tests were first run with (and SOFT-ROCE.md measured).
if [ -n "${RRS_VM_NETDEV_MTU:-}" ]; then
  step ip link set "$NETDEV" mtu "$RRS_VM_NETDEV_MTU"
  [ -n "${RRS_VM_WIRE_MAC:-}" ] || step ip link set veth1 mtu "$RRS_VM_NETDEV_MTU"
fi
# Both ends up, or veth0 has no carrier and the rxe port stays DOWN.
step ip link set "$NETDEV" up
[ -n "${RRS_VM_WIRE_MAC:-}" ] || step ip link set veth1 up

if ! rdma link show "$DEV/1" >/dev/null 2>&1; then
  step rdma link add "$DEV" type rxe netdev "$NETDEV"
fi

deadline=$((SECONDS + ACTIVE_TIMEOUT))
until ibv_devinfo -d "$DEV" 2>/dev/null | grep -q 'state:[[:space:]]*PORT_ACTIVE'; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    ibv_devices >&2; ibv_devinfo -d "$DEV" >&2; rdma link show >&2
    fail "$DEV port not PORT_ACTIVE after ${ACTIVE_TIMEOUT}s"
  fi
  sleep 0.2
done
[ -c /dev/infiniband/rdma_cm ] || fail "/dev/infiniband/rdma_cm missing (rdma_ucm not loaded?)"

# Memory registration pins pages; the default 8 MiB limit is far too small.
ulimit -l unlimited || fail "cannot raise the locked-memory limit"

export RRS_VERBS_ADDR=$ADDR RRS_VERBS_DEVICE=$DEV
[ -z "${RRS_VM_WIRE_MAC:-}" ] || export RRS_VM_WIRE_NIC=$NETDEV
mtu=$(ibv_devinfo -d "$DEV" | awk '/active_mtu/ {print $2}')
echo "guest-setup: $DEV PORT_ACTIVE on $NETDEV $ADDR, active_mtu $mtu (after ${SECONDS}s)" >&2

if [ $# -eq 0 ]; then
  echo "export RRS_VERBS_ADDR=$ADDR RRS_VERBS_DEVICE=$DEV"
  exit 0
fi
exec "$@"
