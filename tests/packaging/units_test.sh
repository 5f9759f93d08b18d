#!/usr/bin/env bash
# The systemd units as installed (ExecStart= names the installed binaries,
# which systemd-analyze verify needs to exist), checked by systemd-analyze
# verify as instances, with the Redis-password drop-in of
# redis-auth.conf.example and the transport TLS drop-in of
# transport-tls.conf.example applied to one of them and the Redis TLS drop-in
# of redis-tls.conf.example to the other: any message fails.
# Usage: units_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
# shellcheck source=tests/packaging/lib.sh
. "$(dirname "$0")/lib.sh"
need systemd-analyze

tmp=$(mktemp -d /tmp/rrs-units-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/usr
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
units=$tmp/units
mkdir -p "$units/rdma-server@main.service.d" "$units/rdma-client@cache1.service.d"
cp "$prefix"/lib/systemd/system/*.service "$units/"
cp "$src/contrib/systemd/redis-auth.conf.example" "$units/rdma-server@main.service.d/redis-auth.conf"
cp "$src/contrib/systemd/transport-tls.conf.example" \
  "$units/rdma-server@main.service.d/transport-tls.conf"
cp "$src/contrib/systemd/redis-tls.conf.example" "$units/rdma-client@cache1.service.d/redis-tls.conf"

verify() {  # instance: no message at all (an unknown key is only a warning)
  local out
  out=$(SYSTEMD_UNIT_PATH="$units:" MANPATH="$prefix/share/man" \
    systemd-analyze verify "$1" 2>&1) || { echo "$out" >&2; return 1; }
  [ -z "$out" ] || { echo "$out" >&2; return 1; }
}
check "systemd-analyze verify rdma-server@main.service (redis-auth, transport-tls drop-ins)" \
  verify rdma-server@main.service
check "systemd-analyze verify rdma-client@cache1.service (with the redis-tls drop-in)" \
  verify rdma-client@cache1.service

for u in rdma-server@.service rdma-client@.service; do
  f=$units/$u
  check "$u: LimitMEMLOCK=infinity" grep -qx 'LimitMEMLOCK=infinity' "$f"
  check "$u: Restart=on-failure" grep -qx 'Restart=on-failure' "$f"
  check "$u: no restart on usage errors (2) or refusals (5)" \
    grep -qE '^RestartPreventExitStatus=.*\b2\b.*\b5\b' "$f"
  check "$u: the secret as a credential" grep -qE '^LoadCredential=secret:' "$f"
  # shellcheck disable=SC2016 # the literal text in the unit
  check "$u: --auth-file from the credentials directory" \
    grep -qF -- '--auth-file ${CREDENTIALS_DIRECTORY}/secret' "$f"
  check "$u: /dev/infiniband stays visible (no PrivateDevices=yes)" \
    bash -c "! grep -qx 'PrivateDevices=yes' '$f'"
  check "$u: no device allow-list (ProtectClock= implies one) that would deny /dev/infiniband" \
    bash -c "! grep -qE '^(ProtectClock=yes|DevicePolicy=(closed|strict)|DeviceAllow=)' '$f'"
  check "$u: netlink allowed (device discovery, rdmacm)" \
    grep -qE '^RestrictAddressFamilies=.*AF_NETLINK' "$f"
done
finish
