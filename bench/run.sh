#!/usr/bin/env bash
# The benchmark in one command: installs what it needs (build dependencies,
# redis-server, matplotlib for the plots), builds the Release tree, then runs
# bench/sync_bench.py with your flags (see --help there and bench/README.md).
#
#   bash bench/run.sh                                  # default data set, every system, 1/2/4 replicas
#   bash bench/run.sh --datasets all                   # the four data sets
#   bash tests/vm/run-in-vm.sh --memory 8G --timeout 3000 -- \
#     python3 bench/sync_bench.py --scale 0.05 --tag vm   # adds sidecar-verbs on Soft-RoCE
#
# On a host with an HCA: bash bench/run.sh --device mlx5_0
# The whole-cluster copy (bench/cluster_bench.py: rdma-client --cluster vs
# redis-cli --cluster import vs native full syncs):
#   bash bench/run.sh cluster                          # 3 source shards -> 4 target masters, 3 runs
#   bash bench/run.sh cluster --target-masters 4,3 --wait-quiet 60
# The replication storm (bench/storm_bench.py: 1..8 replicas at once or staggered,
# native vs the RDB channel vs the sidecar, and --loop, the output-buffer loop):
#   bash bench/run.sh storm --server redis-8.0 --loop
# Another server version: bash bench/run.sh --server valkey-9.1 (or redis-8.0,
# valkey-8.0: names from bash tests/servers.sh list; with --server or
# --target-server this runs bash tests/servers.sh install first)
set -euo pipefail
cd "$(dirname "$0")/.."
harness=bench/sync_bench.py
case "${1:-}" in
  cluster)
    harness=bench/cluster_bench.py
    shift
    ;;
  storm)
    harness=bench/storm_bench.py
    shift
    ;;
esac
bash tests/install-deps.sh
for arg in "$@"; do
  case "$arg" in
    --server | --server=* | --target-server | --target-server=*)
      bash tests/servers.sh install
      break
      ;;
  esac
done
# Debian's python3, which python3-matplotlib serves (a pyenv or venv python3
# earlier on PATH would not see it).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-matplotlib >/dev/null
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
exec "$py" "$harness" "$@"
