#!/usr/bin/env bash
# Boots Debian's stock kernel (installed by install-vm-deps.sh) under QEMU/TCG
# with virtme-ng, over the host's own root file system, brings up Soft-RoCE in
# the guest (guest-setup.sh) and runs COMMAND there, as root, in the current
# directory. /tmp and the repository are shared read-write with the host.
#
#   bash tests/vm/run-in-vm.sh [--timeout SECS] [--memory SIZE] [--cpus N]
#                              [--wire listen:PORT|connect:PORT] [--systemd] -- COMMAND...
#
# COMMAND's words are passed as they are (no shell re-parsing); use
# `-- bash -c '...'` for a pipeline. RRS_*, GTEST_* and CTEST_* variables of
# the caller are passed into the guest.
#
# Exit status: COMMAND's; 124 if COMMAND (or the whole VM) ran out of time;
# 125 if the VM did not boot, or the guest setup failed, so that "the tests
# failed" and "there was nothing to run them on" never look alike.
#
# --wire joins two VMs by a virtual cable (a QEMU socket netdev on host port
# PORT; start the `listen` side first): rxe0 then sits on that NIC, at
# 10.78.0.1 (listen) or 10.78.0.2 (connect), and RRS_VM_WIRE_PEER names the
# other end, RRS_VM_WIRE_NIC the NIC. RoCE traffic then really leaves the
# guest, so tc can cut it (tests/vm/net-cut-vms.sh; tests/vm/README.md says
# why not a netfilter OUTPUT drop).
#
# --systemd boots systemd as the guest's init (vng --systemd) instead of
# virtme-ng-init: COMMAND then runs in serial-getty@ttyS0.service, where
# vng's drop-in starts virtme-ng-init in place of agetty, so systemctl and
# journalctl work as on a real host (tests/vm/README.md, "systemd as init").
#
# Knobs (environment): RRS_VM_KERNEL (a vmlinuz; default the newest
# /boot/vmlinuz-*-amd64), RRS_VM_BOOT_TIMEOUT (s, default 300),
# RRS_VM_HOST_TIMEOUT (s, the whole VM; default boot + setup + --timeout),
# RRS_VM_VERBOSE=1 (show the guest kernel's console).
set -uo pipefail

EXIT_TIMEOUT=124
EXIT_NO_VM=125

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

cmd_timeout=600
memory=2G
cpus=2
boot_timeout=${RRS_VM_BOOT_TIMEOUT:-300}
wire=""
systemd=""

say() { echo "run-in-vm: $*" >&2; }
usage() { sed -n '7,9p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --timeout) [ $# -ge 2 ] || usage; cmd_timeout=$2; shift 2 ;;
    --timeout=*) cmd_timeout=${1#*=}; shift ;;
    --memory) [ $# -ge 2 ] || usage; memory=$2; shift 2 ;;
    --cpus) [ $# -ge 2 ] || usage; cpus=$2; shift 2 ;;
    --wire) [ $# -ge 2 ] || usage; wire=$2; shift 2 ;;
    --systemd) systemd=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) say "unexpected argument '$1' (COMMAND goes after --)"; usage ;;
  esac
done
[ $# -gt 0 ] || { say "no COMMAND given"; usage; }
[[ $cmd_timeout =~ ^[1-9][0-9]*$ ]] || { say "--timeout wants whole seconds > 0, got '$cmd_timeout'"; exit 2; }
wire_opts=()
if [ -n "$wire" ]; then
  [[ $wire =~ ^(listen|connect):([1-9][0-9]*)$ ]] ||
    { say "--wire wants listen:PORT or connect:PORT, got '$wire'"; exit 2; }
  wire_port=${BASH_REMATCH[2]}
  if [ "${BASH_REMATCH[1]}" = listen ]; then
    wire_end=1 wire_peer=2 wire_netdev="listen=127.0.0.1:$wire_port"
  else
    wire_end=2 wire_peer=1 wire_netdev="connect=127.0.0.1:$wire_port"
  fi
  wire_mac=52:54:00:78:00:0$wire_end
  # vng's argument parser takes a value starting with '-' for an option: use '='.
  wire_opts=("--qemu-opts=-netdev socket,id=wire,$wire_netdev -device virtio-net-pci,netdev=wire,mac=$wire_mac")
fi

command -v vng >/dev/null || { say "vng not found: run tests/vm/install-vm-deps.sh first"; exit $EXIT_NO_VM; }
if [ -n "${RRS_VM_KERNEL:-}" ]; then
  kernel=$RRS_VM_KERNEL
else
  # Newest by version order: linux-image-amd64 may leave older kernels behind.
  kernel=$(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V | tail -n 1)
fi
[ -n "$kernel" ] && [ -r "$kernel" ] ||
  { say "no readable kernel (/boot/vmlinuz-*-amd64): run tests/vm/install-vm-deps.sh first"; exit $EXIT_NO_VM; }
kver=${kernel##*/vmlinuz-}
[ -d "/lib/modules/$kver" ] || { say "no /lib/modules/$kver for $kernel"; exit $EXIT_NO_VM; }

# The guest reports back through files in a directory on the shared /tmp:
# vng's own exit status is not a reliable carrier of COMMAND's.
state=$(mktemp -d /tmp/rrs-vm.XXXXXX)
trap 'rm -rf "$state"' EXIT

printf '%q ' "$@" >"$state/cmd"
env | grep -E '^(RRS|GTEST|CTEST)_[A-Za-z0-9_]*=' | grep -Ev '^(RRS_VERBS_|RRS_VM_WIRE_)' |
  while IFS= read -r kv; do printf 'export %q\n' "$kv"; done >"$state/env"
[ -n "$wire" ] && printf 'export RRS_VM_WIRE_MAC=%s RRS_VM_WIRE_ADDR=10.78.0.%s RRS_VM_WIRE_PEER=10.78.0.%s\n' \
  "$wire_mac" "$wire_end" "$wire_peer" >>"$state/env"

q() { printf '%q' "$1"; }
# The guest's only program: setup, then COMMAND under its own timeout.
cat >"$state/guest.sh" <<EOF
echo "\$(cut -d' ' -f1 /proc/uptime)" >$state/booted
cd $(q "$PWD") || exit $EXIT_NO_VM
. $state/env
bash $(q "$here/guest-setup.sh") bash $state/command.sh
rc=\$?
[ -e $state/setup-done ] || echo setup >$state/failed
exit \$rc
EOF
# Run by guest-setup.sh once rxe0 is up, with RRS_VERBS_ADDR exported.
cat >"$state/command.sh" <<EOF
touch $state/setup-done
start=\$SECONDS
timeout -k 10 $cmd_timeout $(cat "$state/cmd")
rc=\$?
echo "\$rc \$((SECONDS - start))" >$state/status
exit \$rc
EOF

# udev would load drivers for QEMU's emulated hardware that nothing here uses
# (kvm alone takes ~5 s under TCG), and CPU-accelerated crypto, whose
# instructions TCG emulates slowly: rxe's per-packet ICRC (crc32) runs ~20%
# faster on crc32-generic than on crc32-pclmul here. modprobe.blacklist stops
# udev's modprobe before it reads a module; module_blacklist any other loader.
unused_modules=kvm,kvm_amd,kvm_intel,powernow_k8,ahci,libahci,sr_mod,cdrom,iTCO_wdt,iTCO_vendor_support,lpc_ich,i2c_i801,pcspkr
unused_modules+=,aesni_intel,ghash_clmulni_intel,polyval_clmulni,sha1_ssse3,sha256_ssse3,sha512_ssse3,crc32_pclmul,crct10dif_pclmul
# Boot, then up to a minute of setup (TCG, loaded machine), then COMMAND.
host_timeout=${RRS_VM_HOST_TIMEOUT:-$((boot_timeout + 60 + cmd_timeout + 30))}
vng_args=(
  # TCG: nested KVM hangs at kernel start on these machines.
  --disable-kvm
  # virtiofsd fails to start here and vng waits 3 s per share before
  # falling back to 9p: go straight to 9p.
  --force-9p
  --run "$kernel" --memory "$memory" --cpus "$cpus" --user root
  --append "modprobe.blacklist=$unused_modules module_blacklist=$unused_modules"
  --rwdir /tmp --rwdir "$repo"
  "${wire_opts[@]}"
)
# The boot unit: the serial getty that runs COMMAND (and sysinit.target:
# udev, the journal), not the default target, which would also start what the
# host enables (here postgresql, redis-server on 6379, apt and man-db timers):
# minutes under TCG, and nothing the tests need. Named as the boot unit, not
# left to the getty generator: the host's /.dockerenv, seen through the shared
# root, makes systemd's tools think they run in a Docker container, and the
# generator then starts console-getty instead. container= (empty, in PID 1's
# environment: "no container", authoritative for PID 1) keeps PID 1 itself
# reading the kernel command line, systemd.unit= included.
[ -n "$systemd" ] && vng_args+=(--systemd --append "systemd.unit=serial-getty@ttyS0.service container=")
[ -n "${RRS_VM_VERBOSE:-}" ] && vng_args+=(--verbose)
[[ $PWD == "$repo" || $PWD == "$repo"/* || $PWD == /tmp* ]] ||
  say "note: $PWD is read-only in the guest (only /tmp and $repo are writable)"

say "kernel $kernel, $cpus CPUs, $memory, TCG${systemd:+, systemd as init}; COMMAND timeout ${cmd_timeout}s, whole VM ${host_timeout}s"
say "running: $*"
t0=$(date +%s.%N)
# QEMU opens /proc/self/fd/1 and /proc/self/fd/2 with O_TRUNC: when they are
# files (a CI log) it would wipe what was written before. Hand it pipes.
timeout -k 10 "$host_timeout" vng "${vng_args[@]}" -- "bash $state/guest.sh" \
  </dev/null > >(cat) 2> >(cat >&2) &
vng_pid=$!
# Forward an interrupt (ctest's timeout, ^C) so QEMU does not outlive us.
trap 'kill -TERM $vng_pid 2>/dev/null; wait $vng_pid; exit 130' INT TERM

elapsed() { echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}'; }
announced=""
while kill -0 "$vng_pid" 2>/dev/null; do
  if [ -z "$announced" ] && [ -s "$state/booted" ]; then
    say "VM up after $(elapsed)s (guest kernel uptime $(cat "$state/booted")s); setting up rxe0"
    announced=1
  fi
  sleep 0.2
done
wait "$vng_pid"
vng_rc=$?
total=$(elapsed)

if [ ! -s "$state/booted" ]; then
  [ "$vng_rc" -eq 124 ] && say "VM did not boot within ${host_timeout}s" ||
    say "VM failed to boot (vng status $vng_rc after ${total}s; RRS_VM_VERBOSE=1 shows the console)"
  exit $EXIT_NO_VM
fi
if [ -e "$state/failed" ]; then
  say "guest setup failed (see guest-setup's message above) after ${total}s"
  exit $EXIT_NO_VM
fi
if [ ! -s "$state/status" ]; then
  if [ "$vng_rc" -eq 124 ]; then
    say "TIMEOUT: the VM was stopped after ${host_timeout}s without COMMAND finishing"
    exit $EXIT_TIMEOUT
  fi
  say "COMMAND left no status (guest crashed? vng status $vng_rc after ${total}s)"
  exit $EXIT_NO_VM
fi
read -r rc ran <"$state/status"
# timeout(1) says 124 (TERM worked) or 137 (needed KILL); COMMAND's own 124
# is told apart by how long it ran.
if { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ "$ran" -ge $((cmd_timeout - 1)) ]; then
  say "TIMEOUT: COMMAND killed after ${ran}s (--timeout $cmd_timeout); total ${total}s"
  exit $EXIT_TIMEOUT
fi
say "COMMAND exited $rc after ${ran}s in the guest; total ${total}s"
exit "$rc"
