#!/usr/bin/env bash
# Installs or builds every Redis/Valkey server version the tests run against,
# and lists where each one's binary is. See usage() below.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bash tests/servers.sh install   install or build every server that is missing
       bash tests/servers.sh list      print one line per server: NAME BINARY VERSION
       bash tests/servers.sh --help    this text

The servers, in the order `list` prints them (NAME is engine-major.minor of
the version the binary reports):
  redis-7.0   Debian 12's redis-server package (/usr/bin/redis-server)
  valkey-8.0  bookworm-backports' valkey-server package (/usr/bin/valkey-server);
              valkey-redis-compat is not installed, /usr/bin/redis-server
              stays Redis 7.0
  redis-8.0   built from Debian's source package `redis`: the newest 8.0.x
              that the trixie, forky and sid deb-src entries offer (the
              next newest if the archive lacks that one's files)
  valkey-9.1  built from Debian's source package `valkey`: the newest 9.1.x
              there; if there is none, the newest 9.x, with a warning (it is
              then listed as valkey-9.N)

`install` is idempotent: what is installed or cached is left alone and
nothing is fetched (a run with nothing to do takes well under a second).
When something is missing it needs root (it re-runs itself under sudo if it
can) to write /etc/apt/sources.list.d/rrs-servers.sources, run apt-get update
and install. That file holds a bookworm-backports `deb` entry and
trixie/forky/sid `deb-src` entries, all on the archive URI this machine's own
apt sources use for bookworm. deb-src entries never change which binary
packages apt installs or upgrades, and backports are NotAutomatic: only
`-t bookworm-backports` takes valkey-server from there. The system service of
a package it installs (valkey-server, redis-server) is stopped and disabled:
the tests start their own servers on free ports. A build takes 1-2 minutes on
2 idle cores, 3-6 on a busy machine (it prints how long); the binaries (server
and cli only) and a BUILD-INFO file are kept in the cache, one directory per
Debian source version, e.g. $RRS_SERVER_CACHE/redis-8.0.6-3/bin/redis-server;
the sources and the build log are deleted after a build that worked.

`list` fetches nothing. It prints every server it finds and exits 1 after
naming each missing one on stderr (fix: bash tests/servers.sh install).
Tests read its output (tests/support/redis_process.h, server_versions()).

Environment:
  RRS_SERVER_CACHE      the build cache (default /var/cache/rrs-servers)
  RRS_REDIS8_VERSION    the Debian source version of `redis` to build instead
                        of the newest 8.0.x, e.g. 5:8.0.6-3 (the epoch may be
                        left out); another series is listed under its own name
  RRS_VALKEY9_VERSION   the same for `valkey`, e.g. 9.1.2-1
  RRS_SERVER_JOBS       make -j for the builds (default: nproc)
Exit status: 0 when every server is there, 1 when one is missing or could not
be installed (stderr says which and why), 2 on a usage error.
EOF
}

cache=${RRS_SERVER_CACHE:-/var/cache/rrs-servers}
jobs=${RRS_SERVER_JOBS:-$(nproc)}
# How the servers are built (see build_server); BUILD-INFO records it.
make_flags="MALLOC=jemalloc BUILD_TLS=yes USE_SYSTEMD=no"
apt_file=/etc/apt/sources.list.d/rrs-servers.sources
# Wait for another apt (a parallel install) instead of failing at once.
apt_opts=(-o DPkg::Lock::Timeout=600 -o APT::Sandbox::User=root)

say() { echo "servers.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# The version server binary $1 of engine $2 reports: "7.0.15" from
# "Redis server v=7.0.15 sha=..."; "" if it does not run or is another
# engine's (valkey-redis-compat's /usr/bin/redis-server is Valkey).
binary_version() {
  local engine
  engine="$(tr '[:lower:]' '[:upper:]' <<<"${2:0:1}")${2:1}"
  "$1" --version 2>/dev/null | sed -n "s/^$engine server v=\([0-9][0-9.]*\) .*/\1/p"
}

# A Debian version without its epoch ("5:8.0.6-3" -> "8.0.6-3"): the cache key.
no_epoch() { echo "${1#*:}"; }

# The built servers: package, engine, asked series, override variable.
built_servers=("redis redis 8.0 RRS_REDIS8_VERSION" "valkey valkey 9.1 RRS_VALKEY9_VERSION")

# Prints the cached build directory for source package $1, series $2 (or the
# exact version in override $3, when set); returns 1 when there is none. A
# directory exists only once its build completed (it is moved into place).
# Whether $1 is a finished build with today's make flags: a cache from
# before the TLS tests (BUILD_TLS=no) is built again, once.
built_here() {
  local dir=$1 pkg
  pkg=$(basename "$dir")
  pkg=${pkg%%-[0-9]*}
  [ -x "$dir/bin/$pkg-server" ] && grep -qF "$make_flags" "$dir/BUILD-INFO" 2>/dev/null
}

cached_build() {
  local pkg=$1 series=$2 exact=$3 major=${2%%.*} dir
  if [ -n "$exact" ]; then
    dir="$cache/$pkg-$(no_epoch "$exact")"
    built_here "$dir" && echo "$dir" && return 0
    return 1
  fi
  # The newest of the series; failing that (the fallback install picks when
  # the archive has no $series.x any more), the newest of its major.
  for pattern in "$pkg-$series.*" "$pkg-$major.*"; do
    dir=$(find "$cache" -mindepth 1 -maxdepth 1 -type d -name "$pattern" 2>/dev/null | sort -V |
      tail -n 1)
    [ -n "$dir" ] && built_here "$dir" && echo "$dir" && return 0
  done
  return 1
}

# One "NAME BINARY VERSION" line per server found; a line on stderr for each
# one missing. Returns 1 if any is missing.
list_servers() {
  local missing=0 path version engine spec pkg series var dir
  # The two packaged servers: engine, binary, the package that installs it.
  for spec in "redis /usr/bin/redis-server redis-server" "valkey /usr/bin/valkey-server valkey-server"; do
    read -r engine path pkg <<<"$spec"
    if [ ! -x "$path" ]; then
      say "missing: $pkg ($path): the $pkg package is not installed; run: bash tests/servers.sh install"
      missing=1
      continue
    fi
    version=$(binary_version "$path" "$engine")
    if [ -z "$version" ]; then
      say "missing: $path is not $engine: it says '$("$path" --version 2>&1 | head -n 1)'; reinstall the $pkg package (apt-get install --reinstall $pkg)"
      missing=1
      continue
    fi
    echo "$engine-$(cut -d. -f1,2 <<<"$version") $path $version"
  done
  for spec in "${built_servers[@]}"; do
    read -r pkg engine series var <<<"$spec"
    if ! dir=$(cached_build "$pkg" "$series" "${!var:-}"); then
      say "missing: $engine ${!var:-$series.x} is not built in $cache; run: bash tests/servers.sh install"
      missing=1
      continue
    fi
    version=$(binary_version "$dir/bin/$pkg-server" "$engine")
    if [ -z "$version" ]; then
      say "missing: $dir/bin/$pkg-server does not run (its --version printed no '$engine server v='); delete $dir and run: bash tests/servers.sh install"
      missing=1
      continue
    fi
    echo "$engine-$(cut -d. -f1,2 <<<"$version") $dir/bin/$pkg-server $version"
  done
  return $missing
}

# The archive URI this machine's apt uses for bookworm: from the deb822 files
# in sources.list.d (a stanza whose Types has deb and Suites has bookworm),
# else from a one-line `deb` entry in /etc/apt/sources.list.
archive_uri() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    if [ ! -f "$f" ] || [ "$f" = "$apt_file" ]; then continue; fi
    uri=$(awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm( |$)/ && enabled != "no" && uri != "" && found == "")
          found = uri
        types = suites = uri = enabled = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      /^Types:/ { $1 = ""; types = $0 " " }
      /^Suites:/ { $1 = ""; suites = $0 " " }
      /^URIs:/ { uri = $2 }
      /^Enabled:/ { enabled = tolower($2) }
      END { flush(); if (found != "") print found }' "$f")
    [ -n "$uri" ] && echo "$uri" && return 0
  done
  if [ -f /etc/apt/sources.list ]; then
    # deb [options] URI bookworm components...
    uri=$(awk '$1 == "deb" {
        i = 2
        if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == "bookworm") { print $i; exit }
      }' /etc/apt/sources.list)
    [ -n "$uri" ] && echo "$uri" && return 0
  fi
  return 1
}

# Writes $apt_file (if its text changed) and runs apt-get update once per run.
apt_ready=0
prepare_apt() {
  [ "$apt_ready" = 1 ] && return 0
  local uri keyring="" text
  uri=$(archive_uri) ||
    die "no apt source for Debian bookworm found (a deb822 stanza in /etc/apt/sources.list.d/*.sources with Types: deb and Suites: bookworm, or a 'deb URI bookworm main' line in /etc/apt/sources.list); add one for this machine's Debian archive mirror"
  # (A line of its own, or none: an empty line would end the stanza.)
  [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] &&
    keyring=$'\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg'
  # Written by tests/servers.sh. deb-src entries only add source packages:
  # they never change which binary packages apt installs or upgrades.
  # bookworm-backports is NotAutomatic: nothing comes from it without -t.
  text="# Written by tests/servers.sh (redis-rdma-sync): valkey-server from
# bookworm-backports; the redis and valkey sources it builds from newer suites.
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main$keyring

Types: deb-src
URIs: $uri
Suites: trixie forky sid
Components: main$keyring"
  if [ "$(cat "$apt_file" 2>/dev/null)" != "$text" ]; then
    say "writing $apt_file (bookworm-backports deb, trixie/forky/sid deb-src on $uri)"
    printf '%s\n' "$text" >"$apt_file"
  fi
  say "apt-get update"
  apt-get "${apt_opts[@]}" update -qq >/dev/null ||
    die "apt-get update failed (see its messages above): is the archive in $apt_file reachable?"
  apt_ready=1
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends \
    "$@" >/dev/null || die "apt-get install $* failed (see its messages above)"
}

# Stops a system service a package started, and keeps it from starting at
# boot: the tests start their own servers on free ports, and a system one
# would hold 6379 (redis-server's and valkey-server's both default to it).
quiet_service() {
  local s=$1
  if [ -d /run/systemd/system ]; then
    systemctl disable --now "$s.service" >/dev/null 2>&1 || true
  elif [ -x "/etc/init.d/$s" ]; then
    service "$s" stop >/dev/null 2>&1 || true
    update-rc.d "$s" disable >/dev/null 2>&1 || true
  fi
}

# Prints the Debian source versions of $pkg to try, best first, one a line:
# override $3 alone if set (it must be in the archive), else those of $series,
# newest first, else (with a warning) those of its major. More than one, because
# a suite's index can name a version whose files the archive lacks (here
# trixie's security-updated redis 8.0.2-3+deb13u3: its .dsc is not found).
source_versions() {
  local pkg=$1 series=$2 exact=$3 major=${2%%.*} v all found want
  all=$(apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -u)
  [ -n "$all" ] || die "apt-cache showsrc $pkg found no source package: are the deb-src entries in $apt_file there and did apt-get update fetch them?"
  if [ -n "$exact" ]; then
    for v in $all; do
      if [ "$v" = "$exact" ] || [ "$(no_epoch "$v")" = "$exact" ]; then
        echo "$v"
        return 0
      fi
    done
    die "$pkg $exact is not in the archive's sources (it has: ${all//$'\n'/ }); set the override to one of them"
  fi
  for want in "$series" "$major"; do
    found=$(for v in $all; do
      case "$(no_epoch "$v")" in "$want".*) echo "$v" ;; esac
    done | sort -rV)
    [ -n "$found" ] || continue
    [ "$want" = "$series" ] ||
      say "WARNING: no $pkg $series.x in trixie/forky/sid; building the newest $major.x instead (listed under its own major.minor)"
    echo "$found"
    return 0
  done
  die "no $pkg $major.x source in trixie/forky/sid (they have: ${all//$'\n'/ }); set an override (bash tests/servers.sh --help)"
}

# Builds source package $1 from the first of the Debian versions $2... whose
# sources apt-get can fetch, into $cache/$1-<version>.
build_server() {
  local pkg=$1 version="" v key work src start log
  shift
  start=$SECONDS
  for v in "$@"; do
    key="$pkg-$(no_epoch "$v")"
    work="$cache/.build-$key"
    log="$cache/$key.build.log"
    rm -rf "$work"
    mkdir -p "$work/out/bin"
    say "fetching the sources of $pkg $v"
    if (cd "$work" && apt-get "${apt_opts[@]}" source -q "$pkg=$v") >"$log" 2>&1; then
      version=$v
      break
    fi
    say "apt-get source $pkg=$v failed; the end of $log:"
    tail -n 5 "$log" >&2
    rm -rf "$work"
  done
  [ -n "$version" ] || die "no sources of $pkg could be fetched (tried: $*); see above"
  src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "$pkg-*" | head -n 1)
  [ -n "$src" ] || die "apt-get source $pkg=$version unpacked no $pkg-* directory in $work"
  say "building $pkg $version (make -j$jobs; log: $log)"
  # The upstream Makefile with its own defaults (-O3 with LTO, the vendored
  # jemalloc in deps/: Debian's sources keep it, so no libjemalloc-dev is
  # needed and the allocator is the one upstream releases ship), which builds
  # with Debian 12's gcc 12. BUILD_TLS=yes: the TLS tests run these too
  # (libssl-dev). USE_SYSTEMD=no: no libsystemd-dev, no sd_notify. Debian's
  # patches (applied by apt-get source) come along: security fixes, and
  # options this build leaves off (USE_SYSTEM_JEMALLOC). Only the server and
  # the cli are built and kept.
  # shellcheck disable=SC2086 # the flags, one a word
  make -C "$src/src" -j"$jobs" $make_flags "$pkg-server" "$pkg-cli" >>"$log" 2>&1 ||
    die "building $pkg $version failed; the end of $log:
$(tail -n 30 "$log")"
  cp "$src/src/$pkg-server" "$src/src/$pkg-cli" "$work/out/bin/"
  local took=$((SECONDS - start))
  printf 'source %s %s\nmake %s -j%s\nbuilt %s in %ss\n' \
    "$pkg" "$version" "$make_flags" "$jobs" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$took" >"$work/out/BUILD-INFO"
  # Moved into place whole: a directory in the cache is a finished build.
  rm -rf "${cache:?}/$key"
  mv "$work/out" "$cache/$key"
  # The sources and the log go; a failed build keeps both for a look (the
  # next run starts it afresh).
  rm -rf "$work" "$log"
  say "built $pkg $version in $((took / 60))m$((took % 60))s: $cache/$key/bin/$pkg-server"
}

install_servers() {
  local need_apt=() need_build=() spec pkg engine series var
  dpkg -s redis-server >/dev/null 2>&1 && [ -x /usr/bin/redis-server ] || need_apt+=(redis-server)
  dpkg -s valkey-server >/dev/null 2>&1 && [ -x /usr/bin/valkey-server ] || need_apt+=(valkey-server)
  for spec in "${built_servers[@]}"; do
    read -r pkg engine series var <<<"$spec"
    cached_build "$pkg" "$series" "${!var:-}" >/dev/null || need_build+=("$spec")
  done
  if [ ${#need_apt[@]} -eq 0 ] && [ ${#need_build[@]} -eq 0 ]; then
    say "every server is installed (cache: $cache)"
    return 0
  fi

  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      die "installing ${need_apt[*]} ${need_build[*]:+and building} needs root: run as root or install sudo"
    say "not root: running again under sudo"
    exec sudo --preserve-env=RRS_SERVER_CACHE,RRS_REDIS8_VERSION,RRS_VALKEY9_VERSION,RRS_SERVER_JOBS \
      bash "$0" install
  fi
  command -v apt-get >/dev/null || die "no apt-get: this script installs from Debian 12's packages"
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ "$codename" = bookworm ] ||
    die "this is '$codename', not Debian 12 (bookworm): the server list is made for bookworm's packages"

  # One install at a time per cache (a CI run and a developer's on one machine).
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9

  prepare_apt
  if [ ${#need_apt[@]} -gt 0 ]; then
    local p
    for p in "${need_apt[@]}"; do
      say "installing $p"
      if [ "$p" = valkey-server ]; then
        # Not valkey-redis-compat: it would take over /usr/bin/redis-server.
        apt_install -t bookworm-backports valkey-server
      else
        apt_install "$p"
      fi
      quiet_service "$p"
    done
  fi
  if [ ${#need_build[@]} -gt 0 ]; then
    # gcc/g++/make, dpkg-dev for apt-get source to unpack, libssl-dev for TLS.
    dpkg -s build-essential dpkg-dev xz-utils libssl-dev >/dev/null 2>&1 || {
      say "installing build-essential dpkg-dev xz-utils libssl-dev"
      apt_install build-essential dpkg-dev xz-utils libssl-dev
    }
    # Every version chosen first: a bad override fails before any build.
    local versions=() i
    for spec in "${need_build[@]}"; do
      read -r pkg engine series var <<<"$spec"
      versions+=("$(source_versions "$pkg" "$series" "${!var:-}")")
    done
    for i in "${!need_build[@]}"; do
      read -r pkg engine series var <<<"${need_build[$i]}"
      # Another run may have built it while this one waited for the lock.
      cached_build "$pkg" "$series" "${!var:-}" >/dev/null && continue
      # shellcheck disable=SC2086 # one version a word
      build_server "$pkg" ${versions[$i]}
    done
  fi
  list_servers >/dev/null || die "installed, but a server is still missing (above)"
  say "every server is installed (cache: $cache)"
}

case "${1:-}" in
  install) install_servers ;;
  list) list_servers ;;
  -h | --help | help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
esac
