#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) in their own build
# directory and runs each for a bounded time, all at once, starting from a
# copy of the checked-in corpus (tests/fuzz/corpus/<target>).
# Usage: bash tests/fuzz/run.sh [seconds-per-target]     (default 60)
# RRS_FUZZ_JOBS=N runs at most N at a time (default all): tests/run.sh runs
# one, so the Soft-RoCE guest beside it keeps a core.
# Exits non-zero if any fuzzer found a crash, a sanitizer error, a leak, a
# hang (-timeout) or an allocation above -malloc_limit_mb; the input that did
# it is printed and left in <build>/fuzz-work/<target>/artifacts/.
# RRS_FUZZ_BUILD sets the build directory (default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
build=${RRS_FUZZ_BUILD:-build-fuzz}

# clang 14 and its runtimes for libFuzzer, ASan and UBSan.
bash tests/install-deps.sh clang libclang-rt-14-dev
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DRRS_FUZZ=ON >/dev/null
cmake --build "$build"

# target:corpus directory
targets=(rdb_parser_fuzz:rdb rdb_value_fuzz:rdb_value rdb_convert_fuzz:rdb_convert resp_parser_fuzz:resp control_fuzz:control table_layout_fuzz:table_layout slot_ranges_fuzz:slot_ranges)
work="$build/fuzz-work"
rm -rf "$work"

# No input may allocate more than 64 MiB at once: the RDB fuzzer's limits
# (rdb::Limits) and inputs (-max_len) keep honest allocations near 1 MiB.
export UBSAN_OPTIONS=print_stacktrace=1
jobs=${RRS_FUZZ_JOBS:-${#targets[@]}}
echo "fuzz: running ${#targets[@]} fuzzers for ${secs}s each, $jobs at a time (logs: $work/<target>/log)" >&2
pids=()
for t in "${targets[@]}"; do
  # Each fuzzer runs for exactly $secs: wait for the oldest one still running.
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[$((${#pids[@]} - jobs))]}" || true
  fi
  name=${t%%:*}
  dir="$work/$name"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "tests/fuzz/corpus/${t#*:}"/* "$dir/corpus/"
  "$build/tests/fuzz/$name" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=64 \
    -max_len=262144 -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!targets[@]}"; do
  name=${targets[$i]%%:*}
  dir="$work/$name"
  rc=0
  wait "${pids[$i]}" || rc=$?
  # "#N  DONE  cov: C ft: F corp: U/S ..." and "stat::average_exec_per_sec: E"
  last=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true)
  final_stat() { sed -n "s/^stat::$1: *//p" "$dir/log" | tail -n 1; }
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  printf 'fuzz: %-18s %-6s runs %-9s exec/s %-7s cov %-5s ft %-6s corpus %-10s new %-5s peak rss %s MB\n' \
    "$name" "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "$(final_stat number_of_executed_units)" \
    "$(final_stat average_exec_per_sec)" "$cov" "$ft" "$corp" "$(final_stat new_units_added)" \
    "$(final_stat peak_rss_mb)"
  if [ $rc -ne 0 ]; then
    failed=1
    echo "---- $name exited $rc; the end of $dir/log:" >&2
    tail -n 80 "$dir/log" >&2
    for f in "$dir"/artifacts/*; do
      [ -e "$f" ] && echo "fuzz: $name: reproducer: $f (replay: $build/tests/fuzz/$name $f)" >&2
    done
  fi
done
exit $failed
