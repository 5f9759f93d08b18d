#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the binaries, the man pages
# (which must render without warnings), the systemd units (ExecStart= naming
# the installed binaries) and the example env files are where GNUInstallDirs
# puts them. Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
# shellcheck source=tests/packaging/lib.sh
. "$(dirname "$0")/lib.sh"
need groff gzip

tmp=$(mktemp -d /tmp/rrs-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/usr
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"

for f in bin/rdma-server bin/rdma-client; do
  check "$f is installed and runs" "$prefix/$f" --version
done
docs=share/doc/redis-rdma-sync
for f in share/man/man1/rdma-server.1.gz share/man/man1/rdma-client.1.gz \
  lib/systemd/system/rdma-server@.service lib/systemd/system/rdma-client@.service \
  $docs/examples/server.env.example $docs/examples/client.env.example \
  $docs/examples/redis-auth.conf.example $docs/examples/redis-tls.conf.example \
  $docs/examples/transport-tls.conf.example \
  $docs/README.md; do
  check "$f is installed" test -s "$prefix/$f"
done
for p in rdma-server rdma-client; do
  check "$p@.service runs $prefix/bin/$p" \
    grep -q "^ExecStart=$prefix/bin/$p " "$prefix/lib/systemd/system/$p@.service"
done

# The pages render (groff -ww: any warning is printed, and fails the check),
# with the sections the script makes and the options from --help.
render() {  # page: the text, or nothing when groff warned
  local out err
  out=$(zcat "$prefix/share/man/man1/$1.1.gz" | groff -man -Tutf8 -P-cbou -ww 2>"$tmp/groff.err")
  err=$(cat "$tmp/groff.err")
  if [ -n "$err" ]; then echo "groff: $err" >&2; return; fi
  printf '%s\n' "$out"
}
for p in rdma-server rdma-client; do
  text=$(render "$p")
  for want in NAME SYNOPSIS DESCRIPTION OPTIONS "--auth-file FILE" "--redis-auth-file FILE" \
    "$p 0"; do
    check "man $p shows '$want'" grep -qF -- "$want" <<<"$text"
  done
done
# man -l is what a user types; only where man-db is installed.
if command -v man >/dev/null 2>&1; then
  check "man -l renders rdma-client.1.gz" \
    bash -c "man -l '$prefix/share/man/man1/rdma-client.1.gz' 2>/dev/null | grep -q -- --follow"
fi
finish
