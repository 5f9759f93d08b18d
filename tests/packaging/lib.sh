# shellcheck shell=bash
# Shared by the packaging tests: sourced, not run.
test_name=$(basename "$0" .sh)
# need TOOL...: each must be on PATH. Missing, the test is skipped (exit 77,
# ctest's SKIP_RETURN_CODE) on a developer's machine, and fails under CI=true,
# where tests/install-deps.sh installed them.
need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 && continue
    if [ "${CI:-}" = true ]; then
      echo "$test_name: FAILED: $t is missing (tests/install-deps.sh installs it)" >&2
      exit 1
    fi
    echo "$test_name: SKIPPED: $t is missing (bash tests/install-deps.sh installs it)" >&2
    exit 77
  done
}

failures=0
check() {  # check DESCRIPTION COMMAND...: run COMMAND, count a failure
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what" >&2
    failures=$((failures + 1))
  fi
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$test_name: $failures check(s) failed" >&2
    exit 1
  fi
  echo "$test_name: all passed"
}
