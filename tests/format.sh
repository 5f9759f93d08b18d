#!/usr/bin/env bash
# Checks or applies .clang-format over the project's tracked C++ sources
# (git ls-files '*.h' '*.cc', without tests/fuzz/corpus/).
# Usage: bash tests/format.sh --check    lists the files clang-format would
#                                        change and exits 1 if there are any
#        bash tests/format.sh --apply    rewrites them in place
# Needs clang-format 14 (Debian 12's clang-format package): another version
# may break lines differently and fail --check on formatted code.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in
  --check | --apply) ;;
  *) echo "usage: $0 --check | --apply" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || {
  echo "format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 2
}
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$version" = 14 ] || echo "format.sh: warning: clang-format $version, the style was tuned with 14" >&2

mapfile -t files < <(git ls-files '*.h' '*.cc' | grep -v '^tests/fuzz/corpus/')

if [ "$mode" = --apply ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P 2 clang-format -i --style=file
  exit 0
fi

# --check: one clang-format per file, two at a time; a file is listed when
# its formatted text differs from what is on disk.
differ=$(printf '%s\0' "${files[@]}" | xargs -0 -P 2 -I{} sh -c \
  'clang-format --style=file "$1" | cmp -s - "$1" || echo "$1"' _ {} | sort)
if [ -n "$differ" ]; then
  echo "format.sh: clang-format would change these files (bash tests/format.sh --apply):" >&2
  echo "$differ" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"
