#!/usr/bin/env bash
# Installs what tests/fuzz/run.sh needs from Debian 12's packages: clang 14
# and its runtimes for libFuzzer, ASan and UBSan (libclang-rt-14-dev), CMake
# and Ninja. make-rdb-corpus.sh also needs redis-server and redis-tools, which
# tests/install-deps.sh installs. Idempotent: does nothing when all is there.
set -euo pipefail

packages=(clang libclang-rt-14-dev cmake ninja-build)

missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-fuzz-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-fuzz-deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
