#!/usr/bin/env bash
# The OCI image and the Kubernetes manifests, played by podman on this host:
#   bash tests/container/kube-play.sh [BUILD_DIR]    (as root; about 1.5 minutes)
# Builds the image with contrib/oci/build-image.sh and, beside it, a test-only
# Redis image from Debian's redis-server the same way (mmdebstrap, podman
# import); makes contrib/kubernetes's pods playable here
# (tests/container/kube_manifests.py says what it changes and why); plays
# the master pod, fills it, checks rdma-server's probes; plays the replica
# pod and checks that rdma-client's /readyz turns ready once the replica is
# the master's own (link up, a partial resync) and holds its data (DEBUG
# DIGEST), that a restarted client leaves it alone, that every container
# runs as non-root on a read-only root, that both programs exit 0 on
# SIGTERM; then podman kube down, and nothing left. Each stage prints the
# seconds so far. Exit status: 0 passed, 1 not.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[ -f "$build/CPackConfig.cmake" ] || { echo "kube-play: no $build/CPackConfig.cmake: build first" >&2; exit 1; }

stage() { printf '== kube-play [%3ds] %s\n' "$SECONDS" "$*"; }
fail() { echo "kube-play: FAILED: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
until_ok() {  # SECS COMMAND...: poll until COMMAND succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

stage "packages"
# podman with runc (Debian's podman takes either runtime), catatonit for
# its pods' pause image, mmdebstrap (and gpg, for its keyrings) for both
# images; redis-cli, curl and PyYAML on the host. All before the two image
# builds, which would otherwise race for apt.
bash tests/install-deps.sh podman runc conmon catatonit containernetworking-plugins \
  mmdebstrap gpg redis-tools curl python3-yaml
# shellcheck source=contrib/oci/lib.sh
. contrib/oci/lib.sh

work=$(mktemp -d /tmp/rrs-kube-play.XXXXXX)
chmod 755 "$work"  # the containers' users read the secrets under it
prefix=rrs-kube-play-
sidecar_image=localhost/redis-rdma-sync:kube-play
redis_image=localhost/rrs-kube-play-redis:latest
pods=("${prefix}redis-replica" "${prefix}redis-master")
# podman as this VM needs it, without touching the system's files: runc
# (crun refuses the hybrid cgroup layout), cgroupfs (no systemd as init), no
# default ulimits (raising RLIMIT_NOFILE is not permitted here).
export CONTAINERS_CONF=$work/containers.conf
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF

cleanup() {
  local rc=$? p c
  [ -z "${writer:-}" ] || kill "$writer" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    for c in $(podman ps -a --filter "name=^$prefix" --format '{{.Names}}' 2>/dev/null); do
      case "$c" in *-infra) continue ;; esac
      echo "--- $c (last lines)" >&2
      podman logs "$c" 2>&1 | tail -n 15 >&2
    done
  fi
  for p in "${pods[@]}"; do podman pod rm -f -t 2 "$p" >/dev/null 2>&1 || true; done
  for p in "${pods[@]}"; do podman volume rm -f "$p-data" >/dev/null 2>&1 || true; done
  podman rmi -f "$sidecar_image" "$redis_image" >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

stage "images: contrib/oci/build-image.sh and a test Redis image, side by side"
build_redis_image() {
  local mirrors
  mapfile -t mirrors < <(debian_mirrors bookworm)
  mmdebstrap --quiet "${rootfs_slim_options[@]}" --include=redis-server \
    "${rootfs_cleanup_hook[@]}" bookworm "$work/redis.tar" "${mirrors[@]}"
  podman import --quiet --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["redis-server"]' "$work/redis.tar" "$redis_image"
  rm -f "$work/redis.tar"
}
bash contrib/oci/build-image.sh "$build" --tag "$sidecar_image" >"$work/build-image.log" 2>&1 &
image_pid=$!
build_redis_image >"$work/redis-image.log" 2>&1 &
redis_pid=$!
wait "$image_pid" || { cat "$work/build-image.log" >&2; fail "contrib/oci/build-image.sh"; }
wait "$redis_pid" || { cat "$work/redis-image.log" >&2; fail "the test Redis image"; }
tail -n 1 "$work/build-image.log"
echo "test Redis image $redis_image: $(human "$(podman image inspect --format '{{.Size}}' "$redis_image")")"

stage "manifests from contrib/kubernetes, secrets as files"
read -r master_port replica_port sidecar_port server_metrics client_metrics < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
# The files kubectl create secret would make (docs/kubernetes.md), owned as
# fsGroup would have them (podman ignores fsGroup): the sidecar's user
# reads the password and the shared secret, Redis's (999) its redis.conf.
password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$work/secrets/redis-auth" "$work/secrets/rdma-sidecar" "$work/manifests"
chmod 755 "$work/secrets" "$work/secrets"/*
printf '%s\n' "$password" >"$work/secrets/redis-auth/password"
printf 'requirepass %s\nmasterauth %s\n' "$password" "$password" >"$work/secrets/redis-auth/redis.conf"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/secrets/rdma-sidecar/secret"
chown 0:10001 "$work/secrets/redis-auth/password" "$work/secrets/rdma-sidecar/secret"
chmod 440 "$work/secrets/redis-auth/password" "$work/secrets/rdma-sidecar/secret"
chown 999:999 "$work/secrets/redis-auth/redis.conf"
chmod 400 "$work/secrets/redis-auth/redis.conf"
python3 tests/container/kube_manifests.py --contrib contrib/kubernetes --out "$work/manifests" \
  --prefix "$prefix" --sidecar-image "$sidecar_image" --redis-image "$redis_image" \
  --secrets "$work/secrets" --master-port "$master_port" --replica-port "$replica_port" \
  --sidecar-port "$sidecar_port" --server-metrics-port "$server_metrics" \
  --client-metrics-port "$client_metrics"
echo "master Redis $master_port, replica Redis $replica_port, sidecar $sidecar_port," \
  "metrics $server_metrics (server) and $client_metrics (client), all on 127.0.0.1"

# redis-cli reads the password from the environment, never the command line.
export REDISCLI_AUTH=$password
rcli() { redis-cli --no-auth-warning -p "$@"; }
field() { rcli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }  # port section name
pings() { [ "$(rcli "$1" PING 2>/dev/null)" = PONG ]; }
probe() {  # port path: "CODE BODY" (000 when nothing answers)
  curl -s -m 2 -o "$work/body" -w '%{http_code}' "http://127.0.0.1:$1$2" >"$work/code" || true
  echo "$(cat "$work/code") $(cat "$work/body" 2>/dev/null)"
}
answers() { [ "$(probe "$1" "$2" | cut -d' ' -f1)" = "$3" ]; }  # port path code
replica_of_master() {
  [ "$(field "$replica_port" replication role)" = slave ] &&
    [ "$(field "$replica_port" replication master_port)" = "$master_port" ] &&
    [ "$(field "$replica_port" replication master_link_status)" = up ]
}
same_data() { [ "$(rcli "$replica_port" DEBUG DIGEST)" = "$(rcli "$master_port" DEBUG DIGEST)" ]; }

stage "podman kube play: the master pod (Redis + rdma-server)"
podman kube play "$work/manifests/redis-master.yaml" >"$work/play-master.log"
until_ok 60 pings "$master_port" || fail "the master's Redis does not answer on $master_port"
until_ok 60 answers "$server_metrics" /readyz 200 ||
  fail "rdma-server's /readyz: $(probe "$server_metrics" /readyz)"
[ "$(probe "$server_metrics" /healthz)" = "200 ok" ] ||
  fail "rdma-server's /healthz: $(probe "$server_metrics" /healthz)"
ok "rdma-server /healthz: $(probe "$server_metrics" /healthz)"
ready=$(probe "$server_metrics" /readyz)
[[ "$ready" == "200 ready: "* ]] || fail "rdma-server's /readyz: $ready"
ok "rdma-server /readyz: $ready"

stage "the master filled from the host (redis-cli)"
rcli "$master_port" DEBUG POPULATE 5000 key: 64 >/dev/null
for i in $(seq 1 500); do
  printf 'HSET user:%d name n%d visits %d\r\nRPUSH list:%d a b %d\r\nSET ttl:%d v PX 3600000\r\n' \
    "$i" "$i" "$i" "$i" "$i" "$i"
done | rcli "$master_port" --pipe >/dev/null
keys=$(rcli "$master_port" DBSIZE)
[ "$keys" = 6500 ] || fail "the master holds $keys keys, not 6500"
ok "the master holds $keys keys"
full_before=$(field "$master_port" stats sync_full)
partial_before=$(field "$master_port" stats sync_partial_ok)

stage "podman kube play: the replica pod (Redis + rdma-client --mode replica --handoff --linger)"
podman kube play "$work/manifests/redis-replica.yaml" >"$work/play-replica.log"
# Writes to the master meanwhile (about 8 s): the client must carry them
# from the sidecar's change log before the handoff, and the master the rest
# in its partial resync.
for i in $(seq 1 400); do
  printf 'SET write:%d %d\r\n' "$i" "$i"
  sleep 0.02
done | rcli "$master_port" --pipe >"$work/writer.log" 2>&1 &
writer=$!
# /readyz from the start to ready: 503 while it loads (the sidecar waits
# --snapshot-delay, 3 s, before it takes the table).
first="" seen_503=no deadline=$((SECONDS + 120))
while :; do
  answer=$(probe "$client_metrics" /readyz)
  case "$answer" in
    000*) ;;
    503*) seen_503=yes; [ -n "$first" ] || first=$answer ;;
    200*) break ;;
    *) fail "rdma-client's /readyz: $answer" ;;
  esac
  [ "$SECONDS" -lt "$deadline" ] || fail "rdma-client's /readyz not ready in 120 s: $answer"
  sleep 0.2
done
[ "$seen_503" = yes ] || fail "rdma-client's /readyz never said 503 while it loaded"
ok "rdma-client /readyz while it loaded: $first"
ok "rdma-client /readyz once done: $answer"
until_ok 30 replica_of_master || fail "the replica is not the master's, link up: $(rcli "$replica_port" INFO replication | tr -d '\r' | head -n 8 | tr '\n' ' ')"
ok "the replica's INFO replication: role:slave master_port:$master_port master_link_status:up"
full=$(field "$master_port" stats sync_full) partial=$(field "$master_port" stats sync_partial_ok)
[ "$partial" -eq $((partial_before + 1)) ] || fail "the master's sync_partial_ok went $partial_before -> $partial, not +1"
# The sidecar's own PSYNC is the one full sync.
[ "$full" -eq $((full_before + 1)) ] || fail "the master's sync_full went $full_before -> $full, not +1 (the sidecar's)"
ok "the master's sync_partial_ok $partial_before -> $partial (the handoff), sync_full $full_before -> $full (the sidecar's snapshot)"
wait "$writer" || fail "the writer: $(cat "$work/writer.log")"
rcli "$master_port" SET after:handoff 1 >/dev/null
until_ok 30 same_data || fail "DEBUG DIGEST differs: master $(rcli "$master_port" DEBUG DIGEST), replica $(rcli "$replica_port" DEBUG DIGEST)"
ok "DEBUG DIGEST equal ($(rcli "$master_port" DEBUG DIGEST)), $(rcli "$replica_port" DBSIZE) keys, the writes during and after the sync included"
podman logs "${prefix}redis-replica-rdma-client" 2>/dev/null | grep -E '^(synced|handoff) ' || true

stage "--linger: the client stays, and a restarted one leaves the replica alone"
client=${prefix}redis-replica-rdma-client
sleep 2
[ "$(podman inspect --format '{{.State.Status}}' "$client")" = running ] || fail "$client is not running"
ok "$client running, /readyz: $(probe "$client_metrics" /readyz)"
podman restart "$client" >/dev/null
until_ok 30 answers "$client_metrics" /readyz 200 || fail "the restarted client's /readyz: $(probe "$client_metrics" /readyz)"
ok "restarted: /readyz $(probe "$client_metrics" /readyz)"
if [ "$(field "$master_port" stats sync_full)" != "$full" ] ||
  [ "$(field "$master_port" stats sync_partial_ok)" != "$partial" ]; then
  fail "the restarted client synced again (the master's sync_full/sync_partial_ok moved)"
fi
replica_of_master || fail "the replica is no longer the master's after the client's restart"
same_data || fail "the replica's data differs after the client's restart"
synced=$(podman logs "$client" 2>/dev/null | grep -c '^synced ' || true)
[ "$synced" = 1 ] || fail "$synced synced lines in $client's log, not 1"
ok "no second sync: the master's counters unchanged, the replica still up and equal"

stage "non-root, read-only root file systems"
for c in $(podman ps --filter "name=^$prefix" --format '{{.Names}}' | grep -v -- '-infra$' | sort); do
  uid=$(podman exec "$c" id -u)
  ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$c")
  [ "$uid" != 0 ] || fail "$c runs as root"
  [ "$ro" = true ] || fail "$c: ReadonlyRootfs=$ro"
  ! podman exec "$c" sh -c ': >/written' 2>/dev/null || fail "$c could write to /"
  case "$c" in
    *-rdma-server | *-rdma-client)
      [ "$uid" = 10001 ] || fail "$c runs as $uid, not 10001"
      # CAP_IPC_LOCK (bit 14) and nothing else effective for its non-root
      # process: verbs registration needs it, or a memlock limit no pod
      # can set.
      want=0000000000004000 ;;
    *) want=0000000000000000 ;;
  esac
  eff=$(podman exec "$c" sed -n 's/^CapEff:\t*//p' /proc/1/status)
  [ "$eff" = "$want" ] || fail "$c: CapEff $eff, not $want"
  # Restarts: a program started before its Redis listens exits 3 and is
  # started again (restartPolicy Always), as in a cluster.
  ok "$c: uid $uid, read-only root, CapEff $eff, restarts $(podman inspect --format '{{.RestartCount}}' "$c")"
done

stage "SIGTERM (podman stop): both programs exit 0"
for c in "${prefix}redis-replica-rdma-client" "${prefix}redis-master-rdma-server"; do
  podman stop -t 10 "$c" >/dev/null
  code=$(podman inspect --format '{{.State.ExitCode}}' "$c")
  [ "$code" = 0 ] || fail "$c exited $code on SIGTERM, not 0"
  ok "$c: exit 0"
done

stage "podman kube down"
podman kube down "$work/manifests/redis-replica.yaml" >/dev/null
podman kube down "$work/manifests/redis-master.yaml" >/dev/null
left=$(podman ps -a --filter "name=^$prefix" --format '{{.Names}}')
[ -z "$left" ] || fail "containers left: $left"
left=$(podman pod ps --filter "name=^$prefix" --format '{{.Name}}')
[ -z "$left" ] || fail "pods left: $left"
ok "no pod or container of the test left"
stage "passed"
