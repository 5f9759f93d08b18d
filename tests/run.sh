#!/usr/bin/env bash
# Builds everything with warnings as errors and runs every test (unit,
# transport conformance, integration with real redis-server processes).
# Usage: bash tests/run.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

bash tests/install-deps.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRRS_WERROR=ON >/dev/null
cmake --build "$build"
# Integration tests start many redis-server processes; two at a time suits a
# 2-core machine without making the run take long.
ctest --test-dir "$build" --output-on-failure -j 2
