#!/usr/bin/env bash
# Installs what tests/vm/run-in-vm.sh needs to boot Debian's stock kernel in a
# small VM with Soft-RoCE (rdma_rxe): qemu, a kernel + modules under /boot and
# /lib/modules (the running kernel is untouched), the rdma-core tools, and
# virtme-ng from PyPI. Idempotent: does nothing when everything is there.
#
# virtme-ng goes into its own venv made with Debian's /usr/bin/python3, not
# into whichever python3 is first on PATH: Debian's python is externally
# managed (PEP 668) and a pyenv python may or may not exist on a machine, so
# a venv at a fixed path works the same everywhere. /usr/local/bin/vng is a
# wrapper that puts the venv's bin/ first on PATH, since vng runs virtme-run
# from PATH.
set -euo pipefail

VNG_VERSION=1.42                 # the version this harness was tested with
VENV=${RRS_VNG_VENV:-/opt/rrs-vng}

packages=(
  qemu-system-x86 linux-image-amd64 kmod
  rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iproute2
  # virtme-ng builds an initramfs around a static busybox to load the guest
  # kernel's virtio/9p modules (busybox-static replaces busybox). udev comes
  # with rdma-core anyway; the guest runs it at boot.
  busybox-static udev
  # timeout and stdbuf (coreutils), taskset (util-linux), the venv for vng.
  coreutils util-linux python3 python3-venv
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-vm-deps: need root (or sudo)" >&2; exit 1; }
  sudo="sudo"
fi

missing=()
for p in "${packages[@]}"; do
  # dpkg -s also succeeds for removed-but-configured packages; ask for the status.
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-vm-deps: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# A kernel must be there; the package pulls in one versioned linux-image-*.
ls /boot/vmlinuz-*-amd64 >/dev/null 2>&1 || {
  echo "install-vm-deps: no /boot/vmlinuz-*-amd64 after installing linux-image-amd64" >&2; exit 1; }

have_version=$("$VENV/bin/python3" -c \
  'import importlib.metadata as m; print(m.version("virtme-ng"))' 2>/dev/null || true)
if [ "$have_version" != "$VNG_VERSION" ]; then
  echo "install-vm-deps: installing virtme-ng==$VNG_VERSION into $VENV" >&2
  [ -x "$VENV/bin/python3" ] || $sudo /usr/bin/python3 -m venv "$VENV"
  $sudo "$VENV/bin/python3" -m pip install -q --disable-pip-version-check \
    "virtme-ng==$VNG_VERSION"
fi
wrapper="#!/bin/sh
# Written by tests/vm/install-vm-deps.sh: vng from its venv, with its helpers.
PATH=\"$VENV/bin:\$PATH\" exec \"$VENV/bin/vng\" \"\$@\""
if [ "$(cat /usr/local/bin/vng 2>/dev/null)" != "$wrapper" ]; then
  printf '%s\n' "$wrapper" | $sudo tee /usr/local/bin/vng >/dev/null
  $sudo chmod 755 /usr/local/bin/vng
fi
