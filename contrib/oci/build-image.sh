#!/usr/bin/env bash
# An OCI image of rdma-server and rdma-client, from a build directory:
#   bash contrib/oci/build-image.sh BUILD_DIR [--tag NAME:TAG] [--license SPDX]
# The project's .deb (cpack -G DEB) and ibverbs-providers (the verbs drivers
# libibverbs loads) in a Debian 12 minbase root file system that mmdebstrap
# makes from this machine's own apt sources, with a user rdma-sync (uid and
# gid 10001; the group rdma is libibverbs1's), imported with podman import:
# no base image from a registry. Nothing in it writes to /: it runs with a
# read-only root. --tag defaults to redis-rdma-sync:<version>; --license
# (the org.opencontainers.image.licenses label) to NOASSERTION, as the
# project states none yet. Installs mmdebstrap and podman if missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=contrib/oci/lib.sh
. "$here/lib.sh"

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
build="" tag="" license=NOASSERTION
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --license) license=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "build-image: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$build" ] || { usage >&2; exit 2; }; build=$1; shift ;;
  esac
done
[ -n "$build" ] || { usage >&2; exit 2; }
[ -f "$build/CPackConfig.cmake" ] ||
  { echo "build-image: no $build/CPackConfig.cmake: configure and build first (README.md, Install)" >&2; exit 2; }

start=$(date +%s.%N)
# cpack's dpkg-shlibdeps needs dpkg-dev; mmdebstrap names the sources'
# keyrings with gpg (its Recommends, not installed with it here).
need_packages mmdebstrap gpg podman dpkg-dev
work=$(mktemp -d /tmp/rrs-oci.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== the .deb: cpack -G DEB from $build" >&2
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; exit 1; }
deb=$(echo "$work"/deb/*.deb)
[ -f "$deb" ] || { echo "build-image: cpack made no .deb in $work/deb" >&2; exit 1; }
version=$(dpkg-deb -f "$deb" Version)
version=${version%-*}  # 0.1.0-1: the Debian revision is not the project's
# The commit the packaged binary was built from (its --version), in full
# when the source tree knows it.
dpkg-deb -x "$deb" "$work/unpacked"
commit=$("$work/unpacked/usr/bin/rdma-server" --version | sed -n 's/.*(commit \([0-9a-f]*\)).*/\1/p;q')
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
full=$(git -C "$src" rev-parse --verify -q "${commit:-none}^{commit}" 2>/dev/null || true)
commit=${full:-${commit:-unknown}}
tag=${tag:-redis-rdma-sync:$version}

mapfile -t mirrors < <(debian_mirrors bookworm)
[ ${#mirrors[@]} -gt 0 ] ||
  { echo "build-image: no Debian 12 (bookworm) entry in this machine's apt sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list)" >&2; exit 1; }
echo "== root file system: mmdebstrap minbase from" >&2
printf '   %s\n' "${mirrors[@]}" >&2
# A local .deb given to --include is unpacked where dpkg, chrooted, cannot
# see it: copied in and installed by apt inside, which fetches its Depends.
# ("$1" in a hook is mmdebstrap's: the root being made.)
# shellcheck disable=SC2016
mmdebstrap --quiet "${rootfs_slim_options[@]}" \
  --include=ibverbs-providers \
  --customize-hook="copy-in $deb /tmp" \
  --customize-hook="chroot \"\$1\" apt-get install -y -qq --no-install-recommends /tmp/${deb##*/} >/dev/null" \
  --customize-hook='chroot "$1" groupadd --gid 10001 rdma-sync' \
  --customize-hook='chroot "$1" useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin rdma-sync' \
  --customize-hook='chroot "$1" rdma-server --version >/dev/null' \
  "${rootfs_cleanup_hook[@]}" \
  bookworm "$work/rootfs.tar" "${mirrors[@]}"

echo "== podman import as $tag" >&2
old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
# Numeric USER: Kubernetes' runAsNonRoot can check a number, not a name.
# No ENTRYPOINT: a container names the program (rdma-server or rdma-client)
# as its command; alone, the image says what it holds.
podman import --quiet \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["rdma-server", "--version"]' \
  --change "LABEL org.opencontainers.image.title=redis-rdma-sync" \
  --change "LABEL org.opencontainers.image.description=\"rdma-server and rdma-client: full sync of Redis/Valkey replicas from a sidecar snapshot, over RDMA or TCP\"" \
  --change "LABEL org.opencontainers.image.version=$version" \
  --change "LABEL org.opencontainers.image.revision=$commit" \
  --change "LABEL org.opencontainers.image.licenses=$license" \
  --change "LABEL org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --message "redis-rdma-sync $version ($commit)" \
  "$work/rootfs.tar" "$tag" >"$work/id"

# A rebuild takes the tag: the image it replaces goes, unless something
# else (another tag, a container) still uses it.
[ -z "$old" ] || podman rmi "$old" >/dev/null 2>&1 || true
size=$(podman image inspect --format '{{.Size}}' "$tag")
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
echo "built $tag id=$(sed 's/^sha256://' "$work/id" | cut -c1-12) version=$version revision=$commit size=$(human "$size") seconds=$seconds"
