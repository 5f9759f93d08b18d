# shellcheck shell=bash
# Shared by contrib/oci/build-image.sh and tests/container/: sourced, not run.
# Root file systems made from Debian 12's packages with mmdebstrap, imported
# with podman: no base image from any registry.

# need_packages PKG...: install those that are missing (apt, no Recommends),
# as tests/install-deps.sh does.
need_packages() {
  local p missing=() sudo=""
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo=sudo
  fi
  echo "installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# debian_mirrors SUITE: "deb URI SUITE[-updates|-security] main" for every
# entry this machine's apt already uses for SUITE, so the image comes from
# the same mirror (or snapshot) as the host's packages and no host name is
# written down here. Reads deb822 files (/etc/apt/sources.list.d/*.sources)
# and one-line ones (/etc/apt/sources.list, sources.list.d/*.list).
debian_mirrors() {
  local suite=$1 f
  {
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      awk -v want="$suite" '
        function flush(   n, m, i, j, u, s) {
          if (f["types"] ~ /(^| )deb( |$)/ && tolower(f["enabled"]) != "no" &&
              f["components"] ~ /(^| )main( |$)/) {
            n = split(f["uris"], u, " "); m = split(f["suites"], s, " ")
            for (i = 1; i <= n; i++)
              for (j = 1; j <= m; j++)
                if (s[j] ~ ("^" want "(-updates|-security)?$")) print "deb " u[i] " " s[j] " main"
          }
          delete f; key = ""
        }
        /^#/ { next }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]/ { if (key != "") f[key] = f[key] " " $0; next }  # a continuation line
        { key = tolower(substr($0, 1, index($0, ":") - 1)); f[key] = substr($0, index($0, ":") + 1) }
        END { flush() }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      # deb [options] URI SUITE COMPONENT...
      sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v want="$suite" '
        $1 == "deb" && $3 ~ ("^" want "(-updates|-security)?$") {
          for (i = 4; i <= NF; i++) if ($i == "main") { print "deb " $2 " " $3 " main"; break }
        }'
    done
  } | tr -s ' \t' '  ' | awk '!seen[$0]++'
}

# Options for mmdebstrap that keep a root file system small: no docs (the
# copyright files stay), man pages, info or translations; no Recommends but
# those asked for by name. usr-is-merged named, or apt satisfies
# init-system-helpers' "usrmerge | usr-is-merged" with usrmerge, and perl
# with it (45 MB).
# shellcheck disable=SC2034  # for the scripts that source this file
rootfs_slim_options=(
  --variant=minbase
  --aptopt='APT::Install-Recommends "false"'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
)
# The last hook: contrib/oci/slim-rootfs.sh.
oci_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034
rootfs_cleanup_hook=(--customize-hook="sh '$oci_dir/slim-rootfs.sh' \"\$1\"")

# human BYTES: "123.4 MB"
human() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
