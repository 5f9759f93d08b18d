#!/usr/bin/env bash
# Writes a man page (section 1) from a program's --help-all text, verbatim:
#   make-man.sh PROGRAM "one-line summary" OUT.1
# NAME is the program and the summary; SYNOPSIS the "Usage:" lines; every
# "Word:" line alone at the left margin (Options:) starts a section; the
# rest is kept as the help prints it (no-fill), escaped for roff. The
# version in the footer is the first line of PROGRAM --version.
#
# Not help2man: its heuristics reflow our column-formatted help (rdma-client's
# second usage line, its output and exit-code blocks came out mangled), and
# it copies all of --version into the page, whose last line says whether the
# BUILD host has an RDMA device.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: make-man.sh PROGRAM SUMMARY OUT" >&2; exit 2; }
prog=$1 summary=$2 out=$3
name=$(basename "$prog")
help=$("$prog" --help-all)
version=$("$prog" --version | head -n 1 | sed 's/ (.*//')  # "rdma-server 0.1.0"
# Reproducible: the date of SOURCE_DATE_EPOCH when set (as Debian builds do).
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +%Y-%m-%d)

esc() {  # roff-escape stdin: backslashes, hyphens (so flags copy as ASCII), leading . and '
  sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^[.']/\\\\\\&&/"
}

{
  printf '.\\" Generated from "%s --help-all" by contrib/man/make-man.sh; do not edit.\n' "$name"
  printf '.TH %s 1 "%s" "%s" "User Commands"\n' "$(tr '[:lower:]' '[:upper:]' <<<"$name")" \
    "$date" "$(esc <<<"$version")"
  printf '.SH NAME\n%s \\- %s\n' "$(esc <<<"$name")" "$(esc <<<"$summary")"
  printf '.SH SYNOPSIS\n.nf\n'
  # "Usage: a b" and the indented continuation lines that follow it.
  esc <<<"$help" | awk 'NR == 1 { sub(/^Usage: */, ""); print; next }
       !done && /^ +[^ ]/ { sub(/^ +/, ""); print; next }
       { done = 1 }'
  printf '.fi\n.SH DESCRIPTION\n.nf\n'
  # The rest; a blank line right after a heading is dropped.
  esc <<<"$help" | awk 'NR == 1 { next }
       !body && /^ +[^ ]/ { next }
       !body && /^$/ { next }
       { body = 1 }
       /^[A-Z][A-Za-z ]*:$/ { print ".fi"; print ".SH " toupper(substr($0, 1, length($0) - 1)); print ".nf"; fresh = 1; next }
       fresh && /^$/ { next }
       { fresh = 0; print }'
  printf '.fi\n'
} >"$out"
