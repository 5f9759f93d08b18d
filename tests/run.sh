#!/usr/bin/env bash
# Builds everything with warnings as errors, checks the formatting
# (tests/format.sh), runs clang-tidy (tests/tidy.sh), and runs every test: unit
# (tests/unit/), transport (tests/transport/: each transport in-process),
# integration and end-to-end (tests/integration/: real redis-server processes,
# the shipped binaries; every Redis/Valkey version tests/servers.sh installs); the
# same again built with ASan + UBSan (in <build-dir>-asan); the fuzzers for
# 60 s each (clang, ASan + UBSan, in <build-dir>-fuzz;
# tests/fuzz/), the OCI image and the Kubernetes manifests under podman
# (tests/container/), and, beside those, the Soft-RoCE suite (verbs for real, on rxe
# in a small VM; tests/vm/), the network cut over verbs (two such VMs) and the
# packaged units under systemd.
# Usage: bash tests/run.sh [build-dir]
# RRS_SKIP_ASAN=1 leaves out the sanitizer build (about 9 minutes: a second
# full build), RRS_SKIP_FUZZ=1 the fuzzers (about 1.5 minutes with the clang
# build) and RRS_SKIP_VM=1 the Soft-RoCE suite and the cut (13-15 minutes) for quick local
# runs; CI always runs all three.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# Each step's start and the time so far, so a slow run's log says where the
# time went.
step() { echo "== tests/run.sh [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }

# clang-format and clang-tidy 14 for the two lint steps below, ccache for the
# builds.
bash tests/install-deps.sh clang-format clang-tidy ccache
# Every build below (plain, sanitizers, fuzzers) goes through ccache, whose
# cache (and tidy's, tests/tidy.sh) the next run on this machine reuses: an
# unchanged file is not compiled or linted again. Paths are taken relative to
# the checkout, so another clone of the same code hits too.
cache_root=${RRS_CACHE_DIR:-/var/cache/rrs-build}
export CCACHE_DIR="$cache_root/ccache" CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-3G}
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export RRS_TIDY_CACHE="$cache_root/tidy"
# Every Redis/Valkey version the tests run against (tests/servers.sh): Redis
# 7.0 and Valkey 8.0 from Debian's packages, Redis 8.0 and Valkey 9.1 built
# from newer Debian sources once (3 minutes on 2 idle cores) and cached in
# /var/cache/rrs-servers. The list goes to the log and, through
# RRS_SERVERS_FILE, to the tests (tests/support/redis_process.h).
step "server versions"
bash tests/servers.sh install
mkdir -p "$build"
bash tests/servers.sh list | tee "$build/servers.txt"
export RRS_SERVERS_FILE="$PWD/$build/servers.txt"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRRS_WERROR=ON >/dev/null
step "build"
cmake --build "$build"
# Lint: every tracked .h/.cc as .clang-format has it (seconds), and
# clang-tidy over the project's .cc files with .clang-tidy's checks, any
# warning an error (reads the build's compile_commands.json; 5.5 CPU-minutes,
# about 3 minutes on 2 idle cores, 5m40s measured on a busy shared machine).
step "format, clang-tidy"
bash tests/format.sh --check
bash tests/tidy.sh "$build"
# The sanitizer and fuzzer builds, before the lanes: a build keeps both
# cores busy, and the verbs tests' timers in the TCG guest do not bear that.
if [ "${RRS_SKIP_ASAN:-}" = 1 ]; then
  echo "tests/run.sh: RRS_SKIP_ASAN=1: the sanitizer build was NOT run" >&2
else
  step "ASan + UBSan build"
  cmake -S . -B "$build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRRS_WERROR=ON \
    -DRRS_SANITIZE=ON >/dev/null
  cmake --build "$build-asan"
fi
if [ "${RRS_SKIP_FUZZ:-}" != 1 ]; then
  step "fuzzer build"
  bash tests/install-deps.sh clang libclang-rt-14-dev
  CC=clang CXX=clang++ cmake -S . -B "$build-fuzz" -G Ninja -DRRS_FUZZ=ON >/dev/null
  cmake --build "$build-fuzz"
fi

# Then two lanes run side by side, each line of their output marked with its
# lane: the host lane (ctest, the sanitizer ctest, the fuzzers) and the VM
# lane (the Soft-RoCE suite). The VM lane's TCG guest keeps about
# one core busy, mostly waiting on the tests inside it; the host lane fills
# the other.
host_lane() {
  # Integration tests start many redis-server processes; two at a time suits
  # a 2-core machine without making the run take long.
  step "ctest"
  ctest --test-dir "$build" --output-on-failure -j 2

  # The same suite again, every binary and test under AddressSanitizer +
  # UBSan (built before the lanes): a memory error, leak or undefined
  # behaviour anywhere fails the test that hit it (a binary a test starts
  # exits non-zero with the report on stderr).
  if [ "${RRS_SKIP_ASAN:-}" != 1 ]; then
    step "ASan + UBSan ctest"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir "$build-asan" --output-on-failure -j 2
  fi

  if [ "${RRS_SKIP_FUZZ:-}" = 1 ]; then
    echo "tests/run.sh: RRS_SKIP_FUZZ=1: the fuzzers were NOT run" >&2
  else
    step "fuzzers"
    # One at a time (7 minutes): seven at once would take the guest's cores.
    RRS_FUZZ_JOBS=1 RRS_FUZZ_BUILD="$build-fuzz" bash tests/fuzz/run.sh 60
  fi

  # The OCI image (contrib/oci) and the Kubernetes manifests
  # (contrib/kubernetes) played by podman: about 1.5 minutes. Niced: its
  # two image builds yield to the VM lane's guest.
  step "image and manifests under podman"
  nice -n 10 bash tests/container/kube-play.sh "$build"
  step "host lane passed"
}

vm_lane() {
  step "Soft-RoCE suite"
  bash tests/vm/install-vm-deps.sh
  bash tests/vm/run-in-vm.sh --timeout 3600 -- bash tests/vm/verbs-suite.sh "$build"
  step "VM lane passed"
}

if [ "${RRS_SKIP_VM:-}" = 1 ]; then
  host_lane
  echo "tests/run.sh: RRS_SKIP_VM=1: the Soft-RoCE suite was NOT run" >&2
  exit 0
fi
(host_lane) 2>&1 | sed -u 's/^/[host] /' &
host_pid=$!
(vm_lane) 2>&1 | sed -u 's/^/[vm] /' &
vm_pid=$!
host=0 suite=0
wait "$host_pid" || host=$?
wait "$vm_pid" || suite=$?

# Last, alone on the machine: their timeouts are tight (a cut must be noticed
# within --io-timeout), and three TCG guests beside the other lanes starve
# the targets inside them.
# The network cut over verbs: two VMs joined by a virtual cable (about 2 minutes).
step "network cut over verbs"
cut=0
bash tests/vm/net-cut-vms.sh "$build" || cut=$?
# The packaged systemd units run by a real systemd: a VM booted with systemd
# as init (about 5 minutes under TCG).
step "units under systemd"
units=0
bash tests/vm/run-in-vm.sh --systemd --timeout 900 -- \
  bash tests/vm/units-under-systemd.sh "$build" || units=$?
if [ "$host" -ne 0 ] || [ "$suite" -ne 0 ] || [ "$cut" -ne 0 ] || [ "$units" -ne 0 ]; then
  echo "tests/run.sh: FAILED: the host lane exited $host, the Soft-RoCE suite $suite," \
    "the network cut over verbs $cut, the units under systemd $units" >&2
  exit 1
fi
step "all passed"
