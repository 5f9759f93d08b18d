#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy at the top) over the project's own .cc files
# in a configured build directory's compile_commands.json: proto/, common/,
# server/, client/, bench/ and tests/ (all but tests/fuzz, which is
# built only in the separate clang build and is left out). Headers are
# checked through the files that include them. Any warning fails the run
# (WarningsAsErrors in .clang-tidy).
# Usage: bash tests/tidy.sh <build-dir> [path-prefix...]
#   after cmake has configured <build-dir>; path prefixes (server/,
#   proto/rdb_parser.cc) check only the files under them.
# Takes 5.5 CPU-minutes for the 123 files: about 3 minutes on an idle 2-core
# machine (two files at a time), 5m40s measured on a busy shared one.
# Needs clang-tidy 14 (Debian 12's clang-tidy package).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tests/tidy.sh <build-dir> [path-prefix...]}
shift

command -v clang-tidy >/dev/null || {
  echo "tidy.sh: clang-tidy not found (apt-get install clang-tidy)" >&2
  exit 2
}
db="$build/compile_commands.json"
[ -f "$db" ] || {
  echo "tidy.sh: no $db: configure the build first (CMAKE_EXPORT_COMPILE_COMMANDS is on)" >&2
  exit 2
}

root=$(pwd)
mapfile -t files < <(python3 - "$db" "$root" "$@" <<'EOF'
import json, os, sys
db, root, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or rel.startswith("tests/fuzz/") or not rel.endswith(".cc"):
        continue
    if prefixes and not any(rel.startswith(p) for p in prefixes):
        continue
    if rel not in seen:
        seen.add(rel)
        print(rel)
EOF
)
[ ${#files[@]} -gt 0 ] || { echo "tidy.sh: no project sources in $db" >&2; exit 2; }

# RRS_TIDY_CACHE=DIR (tests/run.sh sets it): a file found clean before is
# not checked again while it, every header it includes (the build's own
# dependency list, `ninja -t deps`), .clang-tidy, this script and clang-tidy
# are the same: the key is a hash of all of them, kept in DIR once clean.
# A file whose dependencies the build does not know (not built yet) is
# always checked.
declare -A key=()
todo=("${files[@]}")
if [ -n "${RRS_TIDY_CACHE:-}" ] && mkdir -p "$RRS_TIDY_CACHE" 2>/dev/null; then
  while IFS=$'\t' read -r f k; do key[$f]=$k; done < <(
    ninja -C "$build" -t deps 2>/dev/null | python3 tests/tidy_keys.py "$root" "$build" \
      "$(clang-tidy --version | tr '\n' ' ')" "${files[@]}")
  todo=()
  for f in "${files[@]}"; do
    [ -n "${key[$f]:-}" ] && [ -e "$RRS_TIDY_CACHE/${key[$f]}" ] || todo+=("$f")
  done
  echo "tidy.sh: $((${#files[@]} - ${#todo[@]})) of ${#files[@]} files unchanged since a clean" \
    "check ($RRS_TIDY_CACHE)"
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
# The compile commands are GCC's: clang does not know some of its warning
# options (-Wno-restrict), which with -Werror would be an error. And clang
# (not GCC) deprecates, in C++20, `&` between two enum types, which
# libibverbs' own ibv_reg_mr() macro does (access & IBV_ACCESS_OPTIONAL_RANGE):
# not in the code, nothing it can mend.
# And gtest's headers are not taken for system headers: a TEST() body is a
# function whose name the TEST macro spells, and clang drops any warning
# placed in a system header's macro, so the 80-line limit
# (readability-function-size) would never see a test. The header filter
# still keeps gtest's own warnings out.
[ ${#todo[@]} -eq 0 ] || printf '%s\n' "${todo[@]}" | xargs -P 2 -I{} sh -c '
  log="$2/$(echo "$1" | tr / _).log"
  clang-tidy -p "$3" --quiet --extra-arg=-Wno-unknown-warning-option \
    --extra-arg=-Wno-deprecated-enum-enum-conversion \
    --extra-arg=--no-system-header-prefix=gtest/ "$1" >"$log" 2>&1 ||
    echo "$1" >>"$2/failed"' _ {} "$out" "$build"
secs=$(( $(date +%s) - start ))

if [ -s "$out/failed" ]; then
  # A header's warning is reported once per file that includes it: print
  # each diagnostic once.
  cat "$out"/*.log | grep -v -E '^[0-9]+ (warnings?|errors?)( and [0-9]+ errors?)? generated\.$' |
    awk '/^[^ ].*:[0-9]+:[0-9]+: (warning|error):/ { skip = seen[$0]++ } !skip' >&2
  echo "tidy.sh: FAILED: clang-tidy found problems in $(wc -l <"$out/failed") of" \
    "${#files[@]} files (${secs}s)" >&2
  exit 1
fi
for f in "${todo[@]}"; do
  if [ -n "${key[$f]:-}" ]; then touch "$RRS_TIDY_CACHE/${key[$f]}"; fi
done
echo "tidy.sh: ${#files[@]} files clean (${secs}s)"
