#!/usr/bin/env bash
# The systemd units under a real systemd. Runs INSIDE a VM booted with
# systemd as init, after guest-setup.sh brought up rxe0:
#
#   bash tests/vm/run-in-vm.sh --systemd --timeout 600 -- bash tests/vm/units-under-systemd.sh [build-dir]
#
# The .deb from BUILD_DIR installed (dpkg -i, into the guest's throw-away
# overlay); a master Redis with a few thousand keys and two empty replicas on
# loopback; env files and secrets written from the packaged examples; then
# with systemctl:
#   rdma-server@demo  on rxe0's address (verbs and TCP): active, its ready
#                     line in the journal, a dynamic user, memlock unlimited;
#   rdma-client@demo  over verbs, --follow in replica mode: its replica holds
#                     the master's keys and follows new writes; stays active;
#   rdma-client@tcp   over TCP, --handoff: the replica handed to the master,
#                     the unit then inactive after a clean exit;
#   SIGUSR1 (systemctl kill) publishes a new table; systemctl stop exits 0;
#   env files without REDIS=: exit 2 and no restart;
#   systemd-analyze security of both units, recorded in the log;
# then bench/demo.sh run with the installed binaries over verbs.
# Exit status: 0 all passed, 1 a check failed, 2 not in such a VM.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}
# shellcheck source=tests/packaging/lib.sh
. tests/packaging/lib.sh  # check, finish

: "${RRS_VERBS_ADDR:?run me through tests/vm/run-in-vm.sh --systemd (guest-setup.sh sets RRS_VERBS_ADDR)}"
[ -n "${RRS_VERBS_DEVICE:-}" ] ||
  { echo "$test_name: not in the VM (no RRS_VERBS_DEVICE): dpkg -i and systemctl would change this host" >&2; exit 2; }
[ "$(cat /proc/1/comm)" = systemd ] ||
  { echo "$test_name: PID 1 is $(cat /proc/1/comm), not systemd: boot the VM with run-in-vm.sh --systemd" >&2; exit 2; }

# The VM is this test's alone: fixed ports.
master=6401 replica=6402 replica_tcp=6403 sidecar=12345
conf=/etc/rdma-sidecar
examples=/usr/share/doc/redis-rdma-sync/examples
work=$(mktemp -d /tmp/rrs-units-under-systemd.XXXXXX)
pids=()
cleanup() {
  systemctl stop 'rdma-server@*.service' 'rdma-client@*.service' 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work" /run/systemd/system/rdma-server@.service.d /run/systemd/system/rdma-client@.service.d
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
prop() { systemctl show -p "$2" --value "$1"; }  # unit property
journal() { journalctl -q -u "$1" -o cat --no-pager 2>/dev/null; }
until_ok() {  # SECS COMMAND...: poll until COMMAND succeeds
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}
is() { [ "$(prop "$1" "$2")" = "$3" ]; }         # unit property value
logged() { journal "$1" | grep -qE -- "$2"; }    # unit regex
settled() { is "$1" ActiveState inactive || is "$1" ActiveState failed; }  # ExecStopPost= done too
# What the unit says about itself when something went wrong.
show_unit() {
  systemctl status --no-pager -l "$1" >&2
  journal "$1" | tail -n 30 | sed "s/^/$1: /" >&2
}
# After the first failure there is no point going on: say why, and stop.
bail_if_failed() {
  [ "$failures" -eq 0 ] && return
  local u
  for u in "$@"; do show_unit "$u"; done
  finish
}

rcli() { redis-cli -p "$@"; }
digest() { rcli "$1" DEBUG DIGEST; }
same_data() { [ "$(digest "$1")" = "$(digest $master)" ]; }  # replica port
replica_of() {  # replica-port master-port: a replica of that master, link up
  local info
  info=$(rcli "$1" INFO replication | tr -d '\r')
  grep -qx "master_port:$2" <<<"$info" && grep -qx master_link_status:up <<<"$info"
}
published_count() { journal rdma-server@demo | grep -c '^published '; }
published_more() { [ "$(published_count)" -gt "$1" ]; }
start_redis() {  # name port [redis-server options...]
  local name=$1 port=$2
  shift 2
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --dbfilename "$name.rdb" --enable-debug-command local --logfile "$work/$name.log" "$@" &
  pids+=($!)
  until_ok 20 rcli "$port" PING >/dev/null 2>&1 ||
    { echo "$test_name: redis-server $name did not start (see $work/$name.log)" >&2; exit 1; }
}

# write_env EXAMPLE DEST VAR=value...: the packaged example with those lines
# replaced (each must be there: the example is what an operator starts from).
write_env() {
  local example=$examples/$1 dest=$conf/$2 kv
  shift 2
  cp "$example" "$dest"
  for kv in "$@"; do
    grep -q "^${kv%%=*}=" "$dest" || { echo "$test_name: no ${kv%%=*}= in $example" >&2; exit 1; }
    sed -i "s|^${kv%%=*}=.*|$kv|" "$dest"
  done
}

step "the .deb: cpack -G DEB from $build, dpkg -i"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; exit 1; }
# --no-triggers: man-db's index rebuild (its trigger on /usr/share/man) takes
# minutes under TCG over 9p; the package is configured all the same.
dpkg -i --no-triggers "$work"/deb/*.deb >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; exit 1; }
check "the postinst's daemon-reload: systemd knows rdma-server@.service" \
  is rdma-server@demo.service LoadState loaded
check "... and rdma-client@.service" is rdma-client@demo.service LoadState loaded
bail_if_failed

step "a master with 5000 keys on 127.0.0.1:$master, empty replicas on $replica and $replica_tcp"
start_redis master $master
rcli $master DEBUG POPULATE 5000 key 100 >/dev/null
rcli $master HSET user:1 name Ada lang C++ >/dev/null
rcli $master RPUSH queue a b c >/dev/null
rcli $master SET session:1 token PX 3600000 >/dev/null
keys=$(rcli $master DBSIZE)
check "the master holds 5003 keys" [ "$keys" = 5003 ]
# replica mode wants a diskless load (rdma-client warns otherwise)
start_redis replica $replica --repl-diskless-load swapdb
start_redis replica-tcp $replica_tcp --repl-diskless-load swapdb
bail_if_failed

step "env files and secrets in $conf, from the examples in $examples"
install -d -m 700 $conf
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >$conf/server-demo.secret)
for i in client-demo client-tcp server-bad client-bad; do
  install -m 600 $conf/server-demo.secret "$conf/$i.secret"
done
write_env server.env.example server-demo.env REDIS=127.0.0.1:$master LISTEN="$RRS_VERBS_ADDR" \
  PORT=$sidecar "RDMA_SERVER_ARGS=--transport auto --log-size 16M"
write_env client.env.example client-demo.env SIDECAR_HOST="$RRS_VERBS_ADDR" SIDECAR_PORT=$sidecar \
  REDIS=127.0.0.1:$replica "RDMA_CLIENT_ARGS=--flush --status-interval 5 --transport verbs"
write_env client.env.example client-tcp.env SIDECAR_HOST="$RRS_VERBS_ADDR" SIDECAR_PORT=$sidecar \
  REDIS=127.0.0.1:$replica_tcp \
  "RDMA_CLIENT_ARGS=--flush --transport tcp --mode replica --handoff --master 127.0.0.1:$master"
grep -v '^REDIS=' $conf/server-demo.env >$conf/server-bad.env
grep -v '^REDIS=' $conf/client-demo.env >$conf/client-bad.env
# systemd logs a clean exit at debug level only, and forgets a stopped
# unit's ExecMainStatus once it unloads it: a test-only drop-in puts the
# main process's end into each unit's journal.
for u in rdma-server@ rdma-client@; do
  mkdir -p "/run/systemd/system/$u.service.d"
  cat >"/run/systemd/system/$u.service.d/test-exit-status.conf" <<'EOF'
[Service]
ExecStopPost=/bin/sh -c 'echo "main process: $$EXIT_CODE $$EXIT_STATUS ($$SERVICE_RESULT)"'
EOF
done
systemctl daemon-reload
grep -v '^#' $conf/server-demo.env
grep -v '^#' $conf/client-demo.env
grep -v '^#' $conf/client-tcp.env

step "systemctl start rdma-server@demo"
systemctl start rdma-server@demo
check "rdma-server@demo: a ready line in its journal" until_ok 120 logged rdma-server@demo '^ready '
check "rdma-server@demo: active (running)" is rdma-server@demo SubState running
journal rdma-server@demo | grep '^ready '
check "rdma-server@demo: served over verbs and TCP" logged rdma-server@demo '^ready .* transport=tcp\+verbs'
pid=$(prop rdma-server@demo MainPID)
# DynamicUser= takes its uid from 61184-65519.
check "rdma-server@demo: runs as a dynamic user (uid $(stat -c %u /proc/"$pid"))" \
  [ "$(stat -c %u /proc/"$pid")" -ge 61184 ]
check "rdma-server@demo: locked memory unlimited" \
  grep -qE '^Max locked memory +unlimited +unlimited' /proc/"$pid"/limits
bail_if_failed rdma-server@demo

step "systemctl start rdma-client@demo (--follow over verbs, replica mode)"
systemctl start rdma-client@demo
check "the replica holds the master's data (DEBUG DIGEST)" until_ok 120 same_data $replica
check "... all $keys keys" [ "$(rcli $replica DBSIZE)" = "$keys" ]
check "rdma-client@demo: synced in replica mode (journal)" \
  until_ok 30 logged rdma-client@demo '^synced .*mode=replica'
journal rdma-client@demo | grep '^synced '
check "rdma-client@demo: active (running), following" is rdma-client@demo SubState running
rcli $master SET after:start 1 >/dev/null
check "a write to the master reaches the replica (the change log followed)" until_ok 60 same_data $replica
bail_if_failed rdma-server@demo rdma-client@demo

step "systemctl start rdma-client@tcp (over TCP, --handoff)"
systemctl start rdma-client@tcp
check "rdma-client@tcp: ran to its end" until_ok 120 settled rdma-client@tcp
check "rdma-client@tcp: inactive, not failed: a clean exit after the handoff" \
  is rdma-client@tcp ActiveState inactive
check "rdma-client@tcp: exit 0 (journal)" until_ok 10 logged rdma-client@tcp '^main process: exited 0 '
journal rdma-client@tcp | grep -E '^(synced|handoff) '
check "rdma-client@tcp: handed off with a partial resync" \
  logged rdma-client@tcp '^handoff .*partial_resync=yes'
check "its replica is the master's own: INFO replication master_port:$master, link up" \
  until_ok 30 replica_of $replica_tcp $master
rcli $master SET after:handoff 1 >/dev/null
check "... and holds the master's data" until_ok 60 same_data $replica_tcp
bail_if_failed rdma-client@tcp

step "systemctl kill -s USR1 rdma-server@demo: a new snapshot"
published=$(published_count)
systemctl kill -s USR1 rdma-server@demo
check "rdma-server@demo: a new table published (journal)" until_ok 90 published_more "$published"
journal rdma-server@demo | grep '^published ' | tail -n 1
check "rdma-server@demo: still active (running)" is rdma-server@demo SubState running
rcli $master SET after:usr1 1 >/dev/null
check "rdma-client@demo follows on" until_ok 60 same_data $replica
check "rdma-client@demo: still active (running)" is rdma-client@demo SubState running

step "systemd-analyze security"
systemd-analyze security --no-pager rdma-server@demo.service
systemd-analyze security --no-pager rdma-client@demo.service | tail -n 1

step "systemctl stop"
systemctl stop rdma-client@demo
check "rdma-client@demo: stopped by SIGTERM, exit 0" \
  until_ok 10 logged rdma-client@demo '^main process: exited 0 '
systemctl stop rdma-server@demo
check "rdma-server@demo: stopped by SIGTERM, exit 0" \
  until_ok 10 logged rdma-server@demo '^main process: exited 0 '

step "env files without REDIS=: exit 2, not restarted"
systemctl start rdma-server@bad rdma-client@bad
for u in rdma-server@bad rdma-client@bad; do
  check "$u: failed" until_ok 30 is $u ActiveState failed
  check "$u: exit status 2" is $u ExecMainStatus 2
  journal $u | grep -m1 -- '--redis'
done
# A restart would come RestartSec after the exit: wait that long, and more.
sleep $(($(prop rdma-server@bad RestartUSec | tr -dc 0-9) + 2))
for u in rdma-server@bad rdma-client@bad; do
  check "$u: still failed after RestartSec" is $u ActiveState failed
  check "$u: never restarted (NRestarts=0)" is $u NRestarts 0
done
systemctl reset-failed rdma-server@bad rdma-client@bad

# The README's first command as an operator runs it once the package is in:
# bench/demo.sh with /usr/bin's binaries, over verbs on rxe0.
step "bench/demo.sh with the installed binaries, over verbs on $RRS_VERBS_DEVICE"
check "the demo passed" bash bench/demo.sh --bin-dir /usr/bin --keys 20000 --value-size 200 \
  --listen "$RRS_VERBS_ADDR" --transport verbs

finish
