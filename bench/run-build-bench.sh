#!/usr/bin/env bash
# The table-build benchmark in one command: installs what it needs, builds the
# Release tree, then runs bench/build_bench.py with your flags (see --help there
# and bench/README.md): rdma-server --source psync vs --source scan vs a native
# diskless full sync of the same master, and the master's CPU for each.
#
#   bash bench/run-build-bench.sh                         # 1,000,000 x 1000 B, one run
#   bash bench/run-build-bench.sh --scale 0.05            # quick
#   bash bench/run-build-bench.sh --rdbcompression no --wait-quiet 300
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/install-deps.sh
py=/usr/bin/python3   # Debian's; the harness needs only the standard library
[ -x "$py" ] || py=python3
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
exec "$py" bench/build_bench.py "$@"
