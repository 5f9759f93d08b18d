#include "client/client_config.h"

#include <cstdint>
#include <vector>

#include "common/cli/args.h"
#include "common/cli/cpu_list.h"
#include "common/cli/huge_pages_flag.h"
#include "common/cli/metrics_flag.h"
#include "proto/control.h"

namespace rrs {

namespace {

constexpr const char* kUsage = R"(Usage: rdma-client <server-ip> <server-port> [options]
       rdma-client --cluster <sidecar HOST:PORT>... --redis <target node> [options]
       rdma-client --verify --source-redis HOST:PORT --redis HOST:PORT [options]

Reads the mapping table published by rdma-server and loads every key into a
local Redis, in one of two ways:
  --mode restore (default): pipelined RESTORE ... REPLACE ABSTTL, in the right
      DB, with absolute expiries; keys already expired are skipped and
      counted. The target stays what it was (a master, a cluster node).
  --mode replica: the target is told REPLICAOF a listener the client opens
      (on the address it reaches the target from; only the target may
      connect) and is answered as a master answers a new replica: +FULLRESYNC
      with the master's replication ID and the table's offset, then an RDB
      the client writes from the table as it reads it. The target loads at
      its native speed (give it repl-diskless-load swapdb or on-empty-db, or
      it writes the RDB to disk first; the client warns) and ends up a real
      replica of the master's history at the table's offset, its master link
      down once the client exits: REPLICAOF <master> then continues it with
      a partial resync, or use --handoff. Not for cluster nodes.

With --cluster the target is a Redis (or Valkey) Cluster and the sidecars
are one rdma-server per source shard (beside its master or one of its
replicas), each named HOST:PORT; every shard's table is read at once, and
each key is RESTOREd into the target master that owns its hash slot, through
one pipeline per target master, whatever the two clusters' layouts.
MOVED and ASK are followed, TRYAGAIN and CLUSTERDOWN retried, and a master
lost mid-load (a failover) gets its unanswered RESTOREs sent again by a fresh
slot map (RESTORE ... REPLACE ABSTTL: a second copy changes nothing), until
--io-timeout passes without an answer. Keys outside DB 0 are refused (a
cluster has no other DB); --flush flushes every target master; a non-empty
master without --flush/--merge is refused. Restore mode only.
With --cluster --follow, each shard's stream is then followed on its own
thread: each command (a MULTI/EXEC block, an EVAL: as one unit) goes to the
master owning its keys' slot, which the target's own COMMAND INFO and
COMMAND GETKEYS say; a slot's commands keep their order across MOVED/ASK/
TRYAGAIN. PING, REPLCONF and SELECT 0 are dropped; a shard's FLUSHALL or
FLUSHDB deletes the keys of that shard's slots; keyless commands the target
marks for every shard (FUNCTION LOAD) go to every master. Anything else (a
unit whose keys span slots, a keyless one, SELECT n) stops every follower,
naming it and its stream offset (exit 5). A shard that cannot be continued
(its follower fell behind the log, or its master began a new history) stops
them all (exit 3): a cluster cannot be resynced shard by shard; run again
with --flush.

With --verify no sidecar is read: the target (--redis) is compared with the
Redis it was synced from (--source-redis), logically, so any two versions
(Redis 7.0 to 8.x, Valkey 8 to 9) compare: every DB that holds keys, each
source key (SCAN; --sample N: N random ones) by TYPE, its value by type (a
string; a list in order; a set's members; a zset's members and scores; a
hash's fields and values, and each field's TTL where a server has field TTLs,
"none" where it has not; a stream's entries, last id, groups, consumers and
pending entries, with the counters both servers report), and its PTTL within
--ttl-tolerance-ms; a full run also reports keys only the target holds.
Reads are pipelined, a batch of keys per round trip; a key that differs is
read once more before it is reported (a replica a moment behind). Function
libraries are compared by name and code (FUNCTION LIST WITHCODE; a side that
refuses it leaves them uncompared, with a warning). Prints the first
differences and a summary (see Output below); changes nothing on either side.

Options:
  --redis HOST:PORT       Redis to load into (default 127.0.0.1:6379); with
                          --cluster any node of the target cluster
  --cluster               the target is a cluster, the sidecars are its
                          source's shards (see above)
  --redis-auth-file FILE  its credentials: "password" or "user password" on
                          the first line (else $RDMA_CLIENT_REDIS_AUTH)
  --auth-file FILE        the sidecar's shared secret, the same as its
                          --auth-file (else $RDMA_SIDECAR_SECRET). With one,
                          the sidecar must prove it holds it too; without,
                          only a sidecar that asks for none is read
  --mode restore|replica  how to load (see above; default restore, and
                          replica with --follow, see there)
  --flush                 FLUSHALL the target first, and replace its functions
                          with the table's (FUNCTION RESTORE ... FLUSH); in
                          replica mode: allow a non-empty target (its full
                          sync replaces everything it holds)
  --merge                 load into a non-empty target; table keys replace
                          existing ones, other keys stay; function libraries
                          replace those of the same name
                          (without either, a non-empty target is refused, and
                          so is a function library the target already has)
  --atomic                restore mode: load each of the table's DBs into an
                          empty staging DB (the highest-numbered DBs the table
                          does not use; the target needs enough `databases`,
                          and memory for both copies), then swap them all in
                          at once once everything is loaded and checked:
                          SWAPDB, the functions and the flush of the old data
                          in one MULTI/EXEC. A failed sync flushes the staging
                          DBs and leaves the target's data as it was. With
                          --flush the old data stays visible until the swap;
                          refuses --merge. Replica mode: accepted, adds nothing
                          (Redis's own full sync already keeps the old data
                          until the new copy is complete)
  --connect-timeout SECS  keep retrying the server this long while it is
                          unreachable, has no table yet or is full (default 30)
  --io-timeout SECS       longest wait for any answer once connected (default 30)
  --chunk-size BYTES      bytes per read, suffix k/M allowed (default 4M; the
                          client holds about (in-flight + 15) read buffers)
  --in-flight N           reads outstanding at once (default 8)
  --retries N             reconnects after a lost connection (default 3); the
                          sync resumes where it stopped if the server still
                          serves the same epoch
  --transport auto|tcp|verbs
                          auto (default): verbs when a local RDMA device with
                          an active port reaches the server and it accepts
                          RDMA connections, else TCP; says which and why
  --no-load               fetch and validate the whole table but load nothing;
                          prints `fetched keys=N functions=L scripts=S
                          table_bytes=B ... MBps=X`
                          (the transfer alone, no Redis needed)
  --skip-module-data      load a table whose master held module data that is
                          not a key (MODULE_AUX: the table cannot carry it);
                          without this such a table is refused (exit 5)
  --allow-missing-keys    load a table that lacks keys the sidecar could not
                          copy (--source scan: a DUMP that failed; its ready
                          line's keys_lost=N); without this such a table is
                          refused (exit 5)
  --allow-lossy-conversion
                          the target reads an older RDB version than the
                          master wrote, so values are converted for it; load
                          them even where the target has no place for part
                          of a value (hash field TTLs before Redis 7.4 /
                          Valkey 9, stream consumers' active times before
                          RDB 11), counting per kind what was dropped;
                          without this such a table is refused (exit 5)
                          before anything is loaded
  --follow                after the sync, keep the target in step with the
                          master: tail rdma-server's change log (the master's
                          replication stream) and apply it, until SIGINT or
                          SIGTERM (which stop after the current batch, exit
                          0). A follower that falls behind the log, or whose
                          sidecar or master began a new history, resyncs
                          from the newest table (flushing the target) on its
                          own. Needs rdma-server --source psync (refused,
                          exit 5, for a table from --source rdb).
                          Without --mode (and --atomic) it loads and follows
                          in replica mode, unless the target runs in cluster
                          mode: a replica expires nothing by its own clock,
                          it waits for the master's DEL. There the stream's
                          bytes are forwarded verbatim down the target's
                          replica link, so its replication offset moves
                          exactly as the master's. In restore mode (a
                          cluster node, or --mode restore) the target is a
                          master and expires keys itself: keys expiring
                          within 10 minutes of the load are held with a
                          guard TTL until the follower has caught up, then
                          given their own back unless the master's stream
                          changed them (their user needs +pexpiretime)
  --status-interval SECS  --follow: seconds between status lines (default 5;
                          0: none)
  --log-stall SECS        --follow: a change log that has not grown for SECS
                          is stalled (the sidecar's link to the master is
                          stuck or was given up): stop, exit 3 (default 35:
                          3 x the master's repl-ping-replica-period of 10 s,
                          + 5 s; raise it with the master's period; 0: never)
  --handoff               replica mode: follow the change log until the target
                          has caught up, then point it at the real master
                          (REPLICAOF --master), which continues it with a
                          partial resync; checks first that the master's
                          backlog still covers the target's offset (if not,
                          leaves the target alone and says how large
                          repl-backlog-size must be), and verifies by the
                          target's own INFO replication (its link to that
                          host and port, its backlog kept) that the resync
                          was partial.
                          From an rdma-server --source rdb table: hands off
                          at the file's repl-offset at once (no change log);
                          refused (exit 5) when the file had no repl-id and
                          repl-offset
  --master HOST:PORT      --handoff: the master, as the target reaches it
  --master-auth-file FILE --handoff: the master's credentials, for reading its
                          INFO (else $RDMA_CLIENT_MASTER_AUTH); the target
                          itself authenticates with its own masterauth
  --cpu LIST              run on these CPUs only ("1", "2-3,6"); give the
                          target Redis other cores: a client sharing the
                          target's core slows the load (docs/operations.md)
  --huge-pages auto|on|off
                          transparent huge pages for the read buffers. auto
                          (default): on, except in a VM whose balloon reports
                          free memory to its host (see rdma-server --help)
  --quiet                 no progress output
  --metrics [ADDR:]PORT   serve Prometheus metrics (text format) at
                          http://ADDR:PORT/metrics while running; ADDR
                          defaults to 127.0.0.1. Off by default. A port in
                          use exits 2
  --log-format text|json  stderr's log lines: text (default),
                            2026-11-25T23:46:38.123Z rdma-client WARN ...
                          or json, one object per line:
                            {"ts":"...","level":"warn","program":"rdma-client","msg":"..."}
  --verify                compare --redis with --source-redis (see above)
  --source-redis HOST:PORT
                          --verify: the Redis the target was synced from
  --source-redis-auth-file FILE
                          --verify: its credentials, as --redis-auth-file
                          (else $RDMA_CLIENT_SOURCE_AUTH)
  --sample N              --verify: N random source keys (RANDOMKEY, spread
                          over the DBs by their size), not every key; does
                          not look for keys only the target has
  --ttl-tolerance-ms MS   --verify: TTLs this close are equal (default 2000:
                          the two sides are read moments apart, and two hosts'
                          clocks differ while a sync carries absolute expiries)
  --max-differences N     --verify: difference lines to print (default 10;
                          all are counted)
  --version               the release and commit, the wire formats and RDB
                          versions it speaks, whether verbs is available
  -h, --help              this text

Output: progress on stderr; on stdout one summary line:
  synced keys=N bytes=B dbs=DB:N,... functions=L scripts=S skipped_expired=N
         failed=N seconds=S transfer_s=T MBps=X keys_per_s=Y epoch=E
  (functions: libraries restored; scripts: Lua scripts loaded; seconds: start
  to last key loaded; transfer_s: start to last table byte read); replica
  mode adds mode=replica offset=O rdb_bytes=B (the offset the target is at);
  --atomic adds staging=DB:S,... (the staging DB each DB was loaded into).
  A sync that stops midway prints instead, with the reason on stderr:
  incomplete keys=N bytes=B dbs=DB:N,... functions=L scripts=S ...
         unacknowledged=U table_keys=T ... target=partial|untouched
  (keys, dbs: what the target holds of the table; unacknowledged: RESTOREs
  sent whose reply never came, which it may hold too; --atomic: keys=0 and
  staged_keys=N, loaded into the staging DBs and flushed again)
  --cluster: a synced (or incomplete) line per source shard, whose fields add
  source=HOST:PORT masters=M moved=N asked=N retried=N resent=N (the target
  masters it loaded into, redirections followed, RESTOREs sent again), then
  cluster-synced sources=S masters=M keys=N bytes=B failed=N seconds=S
         keys_per_s=Y per_master=HOST:PORT/N,...
  (cluster-incomplete, same fields, when any shard failed)
With --follow, then a line per status interval:
  following offset=O lag_bytes=B lag_ms=M commands=N resyncs=R log_id=L
  (--cluster: one per shard, "following source=HOST:PORT offset=O ...
  commands=N moved=N asked=N retried=N resent=N all_masters=N flushes=N ...")
  (offset: the master's replication offset the target has reached; lag_bytes:
  stream bytes the sidecar holds that are not applied yet; lag_ms: how long
  the oldest of them has been waiting, 0 when caught up; replica mode shows
  acked=O, the offset the target last acknowledged, instead of commands=N)
With --handoff, at the end (caught_up: the last status line, when the
target had all but at most 64 KiB of what the log held):
  caught_up offset=O lag_bytes=B ...
  handoff master=H:P offset=O partial_resync=yes sync_partial_ok=+1
          sync_full=+0 seconds=S
Exit codes: 0 every record loaded or knowingly skipped; 1 some records were
not loaded (listed on stderr; with --atomic: so nothing was swapped in); 2 bad
usage; 3 server or Redis unreachable, auth refused, or timeout; 4 the table
failed validation; 5 the target cannot take the data (not empty without
--flush/--merge, a function library it already has, or too old for the
payloads or for functions; with --atomic also too few spare DBs to stage in,
or a cluster-mode target). With --follow:
0 after SIGINT/SIGTERM; 1 also when the target refuses a streamed command
(named on stderr with its stream offset); 3 also when the target goes away,
or the change log has not grown for --log-stall (the sidecar's link to the
master is stuck or given up, or the sidecar stays unreachable). With
--cluster --follow: 3 also when a shard's follower fell behind its change
log or its master began a new history (rerun with --flush); 5 when a shard's
stream holds what a cluster cannot apply as one unit (keys in several
slots, a keyless command not meant for every master, SELECT n).
Replica mode: 5 also for a cluster-mode target or one older than Redis 4.0;
the link takes only the target's own PSYNC (its replication ID), and success
needs the target's INFO replication to show the table's history, link up (1
otherwise); a failed sync detaches the target (REPLICAOF NO ONE). With
--handoff: 5 when the master cannot continue the target's history (another
replication ID, or its backlog no longer reaches the target's offset; the
target is left untouched); 1 when the master answered with a full resync
after all; 3 when the target's link to the master does not come up.
With --verify, a line per difference (the first --max-differences):
  different key=K db=N what=type|value|ttl|field-ttl|missing|extra
            source=... target=...
  (K and the values escaped: space, '\' and bytes outside printable ASCII
  as \xNN; values cut at 64 bytes),
  different library=NAME what=library-missing|library-extra|library-code
            source=... target=...
  then
  verify: equal|different keys=N compared=N different=N missing=N extra=N
          libraries=N|- libraries_different=N seconds=S
  and exit 0 equal, 1 different, 2 bad usage, 3 could not compare (a side
  unreachable, auth refused, a timeout, a reply that makes no sense).
)";

// Flags that cannot go together, or need another: the first such problem.
Status check_combinations(const ClientConfig& c) {
  const auto bad = [](std::string why) { return Status::error("arguments", std::move(why)); };
  const bool replica = c.mode == IngestMode::kReplica;
  if (c.verify) return {};  // check_verify()
  if (c.follow && c.no_load) return bad("--follow needs a target: drop --no-load");
  if (c.follow && c.policy == TargetPolicy::kMerge)
    return bad("--follow replaces the target's data when it must resync, which --merge "
               "promises not to do: use --flush or an empty target");
  if (c.atomic && c.no_load) return bad("--atomic needs a target: drop --no-load");
  if (c.atomic && c.policy == TargetPolicy::kMerge)
    return bad("--atomic swaps whole DBs in, which --merge promises not to do (it keeps "
               "the target's other keys): use --atomic --flush, or --merge alone");
  if (replica && c.no_load) return bad("--mode replica loads a target: drop --no-load");
  if (replica && c.policy == TargetPolicy::kMerge)
    return bad("--mode replica replaces the target's data (it becomes a replica), "
               "which --merge promises not to do: use --flush, an empty target, or "
               "--mode restore --merge");
  if (c.handoff && !replica)
    return bad("--handoff needs --mode replica: only a target that holds the master's "
               "replication ID and offset can continue with a partial resync");
  if (c.handoff && c.master.port == 0)
    return bad("--handoff needs --master HOST:PORT: the real master, as the target can reach it");
  if (c.cluster && replica)
    return bad("--cluster loads with RESTORE: a cluster node cannot be a replica of the "
               "client (REPLICAOF is refused in cluster mode); drop --mode replica");
  if (c.cluster && c.atomic)
    return bad("--cluster cannot be --atomic: a cluster has only DB 0, so there is no DB to "
               "stage into and no SWAPDB; drop --atomic");
  if (c.cluster && c.handoff)
    return bad("--cluster cannot --handoff: a cluster node cannot be a replica of the "
               "client, so there is no replica link to hand off");
  if (c.master.port != 0 && !c.handoff)
    return bad("--master is the address --handoff points the target at: add --handoff, or "
               "drop --master");
  return {};
}

// --verify's flags; true when the current argument was one of them.
bool take_verify_flag(ArgReader& args, ClientConfig& c) {
  if (args.flag("--verify")) {
    c.verify = true;
    return true;
  }
  return args.endpoint("--source-redis", c.source_redis) ||
         args.option("--source-redis-auth-file", c.source_redis_auth_file) ||
         args.number("--sample", 1, UINT64_MAX, c.verify_sample) ||
         args.number("--ttl-tolerance-ms", 0, 86400000, c.ttl_tolerance_ms) ||
         args.number("--max-differences", 0, UINT64_MAX, c.max_differences);
}

// --verify reads two Redis servers and nothing else: no sidecar, no load.
Status check_verify(const ClientConfig& c, const std::vector<std::string>& positional) {
  const auto bad = [](std::string why) { return Status::error("arguments", std::move(why)); };
  if (!c.verify) {
    if (c.source_redis.port != 0 || !c.source_redis_auth_file.empty() || c.verify_sample != 0)
      return bad("--source-redis, --source-redis-auth-file and --sample go with --verify");
    return {};
  }
  if (c.source_redis.port == 0)
    return bad("--verify needs --source-redis HOST:PORT: the Redis the target was synced from");
  if (!positional.empty()) return bad("--verify reads no sidecar: drop the positional arguments");
  if (c.cluster || c.follow || c.handoff || c.no_load || c.atomic || c.mode_given ||
      c.policy != TargetPolicy::kRequireEmpty)
    return bad("--verify only compares: drop --cluster, --follow, --handoff, --no-load, "
               "--atomic, --mode, --flush and --merge");
  return {};
}

// The positional arguments: <server-ip> <server-port>, or with --cluster
// one HOST:PORT per sidecar.
Status take_sidecars(const std::vector<std::string>& positional, ClientConfig& c) {
  RRS_RETURN_IF_ERROR(check_verify(c, positional));
  if (c.verify) return {};
  if (c.cluster) {
    if (positional.empty())
      return Status::error("arguments", "--cluster needs the sidecars, HOST:PORT each");
    for (const std::string& p : positional) {
      auto at = parse_endpoint(p);
      if (!at.ok()) return at.status().wrap("--cluster sidecar '" + p + "'");
      c.sidecars.push_back(*at);
    }
    c.server = c.sidecars.front();
    return {};
  }
  if (positional.size() != 2)
    return Status::error("arguments", "expected <server-ip> <server-port>, got " +
                                          std::to_string(positional.size()) +
                                          " positional arguments");
  auto port = parse_port(positional[1]);
  if (!port.ok()) return port.status().wrap("<server-port>");
  c.server = {positional[0], *port};
  return {};
}

}  // namespace

const char* client_usage() { return kUsage; }

Result<ClientConfig> parse_client_args(int argc, char** argv) {
  ClientConfig c;
  ArgReader args(argc, argv);
  std::vector<std::string> positional;
  std::string v;
  uint64_t connect_s = c.connect_timeout.count(), io_s = c.io_timeout.count();
  while (!args.done() && args.error().empty()) {
    if (args.flag("-h") || args.flag("--help")) {
      c.help = true;
    } else if (args.flag("--version")) {
      c.version = true;
    } else if (args.endpoint("--redis", c.redis) ||
               args.option("--redis-auth-file", c.redis_auth_file) ||
               args.option("--auth-file", c.auth_file) || args.endpoint("--master", c.master) ||
               args.option("--master-auth-file", c.master_auth_file) ||
               args.number("--connect-timeout", 0, 86400, connect_s) ||
               args.number("--io-timeout", 1, 86400, io_s) ||
               args.size("--chunk-size", 4096, control::kMaxReadLength, c.chunk_size) ||
               args.number("--in-flight", 1, 1024, c.in_flight) ||
               args.number("--retries", 0, 1000, c.retries) ||
               args.number("--status-interval", 0, 86400, c.status_interval_s) ||
               args.number("--log-stall", 0, 86400, c.log_stall_s) || take_verify_flag(args, c) ||
               metrics_option(args, c.metrics) || huge_pages_option(args, c.huge_pages)) {
    } else if (args.flag("--flush") || args.flag("--merge")) {
      TargetPolicy p = args.previous() == "--flush" ? TargetPolicy::kFlush : TargetPolicy::kMerge;
      if (c.policy != TargetPolicy::kRequireEmpty && c.policy != p)
        args.fail("--flush conflicts with --merge: pick one");
      c.policy = p;
    } else if (args.option("--transport", v)) {
      if (v != "auto" && v != "tcp" && v != "verbs")
        args.fail("--transport: expected auto, tcp or verbs, got '" + v + "'");
      c.transport = v;
    } else if (args.flag("--cluster")) {
      c.cluster = true;
    } else if (args.flag("--atomic")) {
      c.atomic = true;
    } else if (args.option("--cpu", v)) {
      auto cpus = parse_cpu_list("--cpu", v);
      if (!cpus.ok())
        args.fail(cpus.status().message());
      else
        c.cpus = std::move(*cpus);
    } else if (args.option("--log-format", v)) {
      if (auto f = log::parse_format(v))
        c.log_format = *f;
      else
        args.fail("--log-format: expected text or json, got '" + v + "'");
    } else if (args.flag("--quiet")) {
      c.quiet = true;
    } else if (args.flag("--no-load")) {
      c.no_load = true;
    } else if (args.flag("--skip-module-data")) {
      c.skip_module_data = true;
    } else if (args.flag("--allow-missing-keys")) {
      c.allow_missing_keys = true;
    } else if (args.flag("--allow-lossy-conversion")) {
      c.allow_lossy_conversion = true;
    } else if (args.flag("--follow")) {
      c.follow = true;
    } else if (args.flag("--handoff")) {
      c.handoff = true;
    } else if (args.option("--mode", v)) {
      if (v != "restore" && v != "replica")
        args.fail("--mode: expected restore or replica, got '" + v + "'");
      c.mode = v == "replica" ? IngestMode::kReplica : IngestMode::kRestore;
      c.mode_given = true;
    } else if (args.is_flag()) {
      args.unknown();
    } else {
      positional.push_back(args.positional());
    }
  }
  if (!args.error().empty()) return Status::error("arguments", args.error());
  c.connect_timeout = std::chrono::seconds(connect_s);
  c.io_timeout = std::chrono::seconds(io_s);
  if (c.help || c.version) return c;
  RRS_RETURN_IF_ERROR(check_combinations(c));
  RRS_RETURN_IF_ERROR(take_sidecars(positional, c));
  return c;
}

}  // namespace rrs
