#!/usr/bin/env bash
# Installs what building, testing and running the demo need, from Debian 12's
# packages, plus any package names given as arguments (tests/fuzz/run.sh adds
# clang's). Idempotent: does nothing when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libhiredis-dev libevent-dev libibverbs-dev librdmacm-dev libgtest-dev libssl-dev
  redis-server redis-tools python3 iproute2
  # tests/packaging: systemd-analyze verify on the units, cpack's
  # dpkg-shlibdeps for the .deb's Depends, man -l (and groff) on the pages.
  systemd dpkg-dev man-db
  # tests/integration/prometheus_test.cc starts its own (never the service).
  prometheus
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The package starts a system redis-server on 6379; tests and the demo start
# their own on free ports and do not need it: stopped, and kept from starting
# at boot (tests/servers.sh does the same for valkey-server).
# prometheus's package likewise starts a system Prometheus on 9090; the test
# starts its own with a temporary config.
for service in redis-server prometheus; do
  printf '%s\n' "${missing[@]}" | grep -qx "$service" || continue
  if [ -d /run/systemd/system ]; then
    $sudo systemctl disable --now "$service.service" >/dev/null 2>&1 || true
  else
    $sudo service "$service" stop >/dev/null 2>&1 || true
    $sudo update-rc.d "$service" disable >/dev/null 2>&1 || true
  fi
done
