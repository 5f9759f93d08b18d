#!/usr/bin/env bash
# cpack -G DEB, then the .deb as dpkg sees it: named per Debian's
# name_version-release_arch.deb, Depends: computed by dpkg-shlibdeps (the
# RDMA, hiredis and libevent libraries among them), the binaries, man pages
# and units inside, the units' ExecStart= naming /usr/bin.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
# shellcheck source=tests/packaging/lib.sh
. "$(dirname "$0")/lib.sh"
need cpack dpkg-deb dpkg-shlibdeps

tmp=$(mktemp -d /tmp/rrs-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; exit 1; }
debs=("$tmp"/*.deb)
[ -f "${debs[0]}" ] || { echo "$test_name: no .deb in $tmp" >&2; cat "$tmp/cpack.log" >&2; exit 1; }
deb=${debs[0]}
arch=$(dpkg --print-architecture)
name=$(basename "$deb")
echo "built $name"
check "$name is redis-rdma-sync_<version>-1_$arch.deb" \
  grep -qE "^redis-rdma-sync_[0-9]+\.[0-9]+\.[0-9]+-1_$arch\.deb$" <<<"$name"

dpkg-deb --info "$deb" | tee "$tmp/info"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libibverbs1 librdmacm1 libhiredis libevent-core libssl libc6; do
  check "Depends names $lib" grep -q "$lib" <<<"$depends"
done
for field in Maintainer Section Description; do
  check "$field is set" test -n "$(dpkg-deb -f "$deb" "$field")"
done
check "Section is database" test "$(dpkg-deb -f "$deb" Section)" = database

dpkg-deb --contents "$deb" | tee "$tmp/contents"
for f in ./usr/bin/rdma-server ./usr/bin/rdma-client \
  ./usr/share/man/man1/rdma-server.1.gz ./usr/share/man/man1/rdma-client.1.gz \
  ./usr/lib/systemd/system/rdma-server@.service ./usr/lib/systemd/system/rdma-client@.service \
  ./usr/share/doc/redis-rdma-sync/examples/server.env.example \
  ./usr/share/doc/redis-rdma-sync/examples/client.env.example; do
  check "the .deb holds $f" grep -qE " $f\$" "$tmp/contents"
done
dpkg-deb -x "$deb" "$tmp/root"
for p in rdma-server rdma-client; do
  check "$p@.service runs /usr/bin/$p" \
    grep -q "^ExecStart=/usr/bin/$p " "$tmp/root/usr/lib/systemd/system/$p@.service"
  check "the packaged $p runs" "$tmp/root/usr/bin/$p" --version
done
finish
