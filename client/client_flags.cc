#include "client/client_flags.h"

#include <chrono>
#include <cstdint>

#include "common/cli/shared_flags.h"
#include "proto/control.h"

namespace rrs {

namespace {

// --flush or --merge; the other one given too is an error.
FlagSetter set_policy(TargetPolicy& out, TargetPolicy p) {
  return [&out, p](ArgReader& args, std::string_view, const std::string&) {
    if (out != TargetPolicy::kRequireEmpty && out != p)
      args.fail("--flush conflicts with --merge: pick one");
    out = p;
  };
}

FlagSetter set_mode(ClientConfig& c) {
  return [&c](ArgReader& args, std::string_view, const std::string& v) {
    if (v != "restore" && v != "replica")
      args.fail("--mode: expected restore or replica, got '" + v + "'");
    c.mode = v == "replica" ? IngestMode::kReplica : IngestMode::kRestore;
    c.mode_given = true;
  };
}

constexpr HelpText kText = {
    "rdma-client",
    "Usage: rdma-client <server-ip> <server-port> [options]\n"
    "       rdma-client --cluster <sidecar HOST:PORT>... --redis <target node> [options]\n"
    "       rdma-client --verify --source-redis HOST:PORT --redis HOST:PORT [options]\n",
    // --help-all: before the flags.
    "Reads the mapping table published by rdma-server and loads every key into a\n"
    "local Redis, in one of two ways:\n"
    "  --mode restore (default): pipelined RESTORE ... REPLACE ABSTTL, in the right\n"
    "      DB, with absolute expiries; keys already expired are skipped and\n"
    "      counted. The target stays what it was (a master, a cluster node).\n"
    "  --mode replica: the target is told REPLICAOF a listener the client opens\n"
    "      (on the address it reaches the target from; only the target may\n"
    "      connect) and is answered as a master answers a new replica: +FULLRESYNC\n"
    "      with the master's replication ID and the table's offset, then an RDB\n"
    "      the client writes from the table as it reads it. The target loads at\n"
    "      its native speed (give it repl-diskless-load swapdb or on-empty-db, or\n"
    "      it writes the RDB to disk first; the client warns) and ends up a real\n"
    "      replica of the master's history at the table's offset, its master link\n"
    "      down once the client exits: REPLICAOF <master> then continues it with\n"
    "      a partial resync, or use --handoff. Not for cluster nodes.\n"
    "\n"
    "With --cluster the target is a Redis (or Valkey) Cluster and the sidecars\n"
    "are one rdma-server per source shard (beside its master or one of its\n"
    "replicas), each named HOST:PORT; every shard's table is read at once, and\n"
    "each key is RESTOREd into the target master that owns its hash slot, through\n"
    "one pipeline per target master, whatever the two clusters' layouts.\n"
    "MOVED and ASK are followed, TRYAGAIN and CLUSTERDOWN retried, and a master\n"
    "lost mid-load (a failover) gets its unanswered RESTOREs sent again by a fresh\n"
    "slot map (RESTORE ... REPLACE ABSTTL: a second copy changes nothing), until\n"
    "--io-timeout passes without an answer. Keys outside DB 0 are refused (a\n"
    "cluster has no other DB); --flush flushes every target master; a non-empty\n"
    "master without --flush/--merge is refused. Restore mode only.\n"
    "With --cluster --follow, each shard's stream is then followed on its own\n"
    "thread: each command (a MULTI/EXEC block, an EVAL: as one unit) goes to the\n"
    "master owning its keys' slot, which the target's own COMMAND INFO and\n"
    "COMMAND GETKEYS say; a slot's commands keep their order across MOVED/ASK/\n"
    "TRYAGAIN. PING, REPLCONF and SELECT 0 are dropped; a shard's FLUSHALL or\n"
    "FLUSHDB deletes the keys of that shard's slots; keyless commands the target\n"
    "marks for every shard (FUNCTION LOAD) go to every master. Anything else (a\n"
    "unit whose keys span slots, a keyless one, SELECT n) stops every follower,\n"
    "naming it and its stream offset (exit 5). A shard that cannot be continued\n"
    "(its follower fell behind the log, or its master began a new history) stops\n"
    "them all (exit 3): a cluster cannot be resynced shard by shard; run again\n"
    "with --flush.\n"
    "\n"
    "With --verify no sidecar is read: the target (--redis) is compared with the\n"
    "Redis it was synced from (--source-redis), logically, so any two versions\n"
    "(Redis 7.0 to 8.x, Valkey 8 to 9) compare: every DB that holds keys, each\n"
    "source key (SCAN; --sample N: N random ones) by TYPE, its value by type (a\n"
    "string; a list in order; a set's members; a zset's members and scores; a\n"
    "hash's fields and values, and each field's TTL where a server has field TTLs,\n"
    "\"none\" where it has not; a stream's entries, last id, groups, consumers and\n"
    "pending entries, with the counters both servers report), and its PTTL within\n"
    "--ttl-tolerance-ms; a full run also reports keys only the target holds.\n"
    "Reads are pipelined, a batch of keys per round trip; a key that differs is\n"
    "read once more before it is reported (a replica a moment behind). Function\n"
    "libraries are compared by name and code (FUNCTION LIST WITHCODE; a side that\n"
    "refuses it leaves them uncompared, with a warning). Prints the first\n"
    "differences and a summary (see Output below); changes nothing on either side.",
    // --help-all: after the flags.
    "Output: progress on stderr; on stdout one summary line:\n"
    "  synced keys=N bytes=B dbs=DB:N,... functions=L scripts=S skipped_expired=N\n"
    "         failed=N seconds=S transfer_s=T MBps=X keys_per_s=Y epoch=E\n"
    "  (functions: libraries restored; scripts: Lua scripts loaded; seconds: start\n"
    "  to last key loaded; transfer_s: start to last table byte read); replica\n"
    "  mode adds mode=replica offset=O rdb_bytes=B (the offset the target is at);\n"
    "  --atomic adds staging=DB:S,... (the staging DB each DB was loaded into).\n"
    "  A sync that stops midway prints instead, with the reason on stderr:\n"
    "  incomplete keys=N bytes=B dbs=DB:N,... functions=L scripts=S ...\n"
    "         unacknowledged=U table_keys=T ... target=partial|untouched\n"
    "  (keys, dbs: what the target holds of the table; unacknowledged: RESTOREs\n"
    "  sent whose reply never came, which it may hold too; --atomic: keys=0 and\n"
    "  staged_keys=N, loaded into the staging DBs and flushed again)\n"
    "  --cluster: a synced (or incomplete) line per source shard, whose fields add\n"
    "  source=HOST:PORT masters=M moved=N asked=N retried=N resent=N (the target\n"
    "  masters it loaded into, redirections followed, RESTOREs sent again), then\n"
    "  cluster-synced sources=S masters=M keys=N bytes=B failed=N seconds=S\n"
    "         keys_per_s=Y per_master=HOST:PORT/N,...\n"
    "  (cluster-incomplete, same fields, when any shard failed)\n"
    "With --follow, then a line per status interval:\n"
    "  following offset=O lag_bytes=B lag_ms=M commands=N resyncs=R log_id=L\n"
    "  (--cluster: one per shard, \"following source=HOST:PORT offset=O ...\n"
    "  commands=N moved=N asked=N retried=N resent=N all_masters=N flushes=N ...\")\n"
    "  (offset: the master's replication offset the target has reached; lag_bytes:\n"
    "  stream bytes the sidecar holds that are not applied yet; lag_ms: how long\n"
    "  the oldest of them has been waiting, 0 when caught up; replica mode shows\n"
    "  acked=O, the offset the target last acknowledged, instead of commands=N)\n"
    "With --handoff, at the end (caught_up: the last status line, when the\n"
    "target had all but at most 64 KiB of what the log held):\n"
    "  caught_up offset=O lag_bytes=B ...\n"
    "  handoff master=H:P offset=O partial_resync=yes sync_partial_ok=+1\n"
    "          sync_full=+0 seconds=S\n"
    "Exit codes: 0 every record loaded or knowingly skipped; 1 some records were\n"
    "not loaded (listed on stderr; with --atomic: so nothing was swapped in); 2 bad\n"
    "usage; 3 server or Redis unreachable, auth refused, or timeout; 4 the table\n"
    "failed validation; 5 the target cannot take the data (not empty without\n"
    "--flush/--merge, a function library it already has, or too old for the\n"
    "payloads or for functions; with --atomic also too few spare DBs to stage in,\n"
    "or a cluster-mode target). With --follow:\n"
    "0 after SIGINT/SIGTERM; 1 also when the target refuses a streamed command\n"
    "(named on stderr with its stream offset); 3 also when the target goes away,\n"
    "or the change log has not grown for --log-stall (the sidecar's link to the\n"
    "master is stuck or given up, or the sidecar stays unreachable). With\n"
    "--cluster --follow: 3 also when a shard's follower fell behind its change\n"
    "log or its master began a new history (rerun with --flush); 5 when a shard's\n"
    "stream holds what a cluster cannot apply as one unit (keys in several\n"
    "slots, a keyless command not meant for every master, SELECT n).\n"
    "Replica mode: 5 also for a cluster-mode target or one older than Redis 4.0;\n"
    "the link takes only the target's own PSYNC (its replication ID), and success\n"
    "needs the target's INFO replication to show the table's history, link up (1\n"
    "otherwise); a failed sync detaches the target (REPLICAOF NO ONE). With\n"
    "--handoff: 5 when the master cannot continue the target's history (another\n"
    "replication ID, or its backlog no longer reaches the target's offset; the\n"
    "target is left untouched); 1 when the master answered with a full resync\n"
    "after all; 3 when the target's link to the master does not come up.\n"
    "With --verify, a line per difference (the first --max-differences):\n"
    "  different key=K db=N what=type|value|ttl|field-ttl|missing|extra\n"
    "            source=... target=...\n"
    "  (K and the values escaped: space, '\\' and bytes outside printable ASCII\n"
    "  as \\xNN; values cut at 64 bytes),\n"
    "  different library=NAME what=library-missing|library-extra|library-code\n"
    "            source=... target=...\n"
    "  then\n"
    "  verify: equal|different keys=N compared=N different=N missing=N extra=N\n"
    "          libraries=N|- libraries_different=N seconds=S\n"
    "  and exit 0 equal, 1 different, 2 bad usage, 3 could not compare (a side\n"
    "  unreachable, auth refused, a timeout, a reply that makes no sense).\n",
    // --help: before the common flags.
    "Reads the mapping table rdma-server publishes and loads it into a local\n"
    "Redis (--mode restore: RESTOREs; --mode replica: as a master's full sync),\n"
    "then optionally follows the master's stream (--follow); or compares two\n"
    "Redis servers (--verify).",
};

}  // namespace

// Each entry: name, value, default, environment variable, brief (markdown,
// one line), --help-all's text, common, setter (none: documented only).
// NOLINTNEXTLINE(readability-function-size): a table, one entry per flag
std::vector<Flag> client_flags(ClientConfig& c) {
  std::vector<Flag> flags = {
      {"<server-ip> <server-port>", "", "", "", "the rdma-server to read", "", false, nullptr},
      {"--redis", "HOST:PORT", "127.0.0.1:6379", "",
       "the Redis to load into; with `--cluster`, any node of the target cluster",
       "Redis to load into (default 127.0.0.1:6379); with\n"
       "--cluster any node of the target cluster",
       true, set_endpoint(c.redis)},
      {"--cluster", "", "", "",
       "the target is a cluster; the positional arguments are one sidecar per source shard "
       "([cluster.md](cluster.md))",
       "the target is a cluster, the sidecars are its\n"
       "source's shards (see above)",
       true, set_true(c.cluster)},
      {"--redis-auth-file", "FILE", "", "RDMA_CLIENT_REDIS_AUTH", "the target's credentials",
       "its credentials: \"password\" or \"user password\" on\n"
       "the first line (else $RDMA_CLIENT_REDIS_AUTH)",
       true, set_string(c.redis_auth_file)},
      {"--auth-file", "FILE", "", "RDMA_SIDECAR_SECRET",
       "the sidecar's shared secret; with one, the sidecar must prove it too",
       "the sidecar's shared secret, the same as its\n"
       "--auth-file (else $RDMA_SIDECAR_SECRET). With one,\n"
       "the sidecar must prove it holds it too; without,\n"
       "only a sidecar that asks for none is read",
       true, set_string(c.auth_file)},
      {"--mode", "restore|replica", "restore", "",
       "load by RESTORE or as its master; restore: pipelined RESTORE (strings as MSET or SET), "
       "the target stays a master. replica: the target becomes a replica of the client and "
       "loads an RDB; `--follow` makes replica the default ([replica-mode.md](replica-mode.md))",
       "how to load (see above; default restore, and\n"
       "replica with --follow, see there)",
       true, set_mode(c)},
      {"--flush", "", "", "",
       "FLUSHALL a non-empty target first; its functions are replaced with the table's; in "
       "replica mode, a non-empty target is allowed",
       "FLUSHALL the target first, and replace its functions\n"
       "with the table's (FUNCTION RESTORE ... FLUSH); in\n"
       "replica mode: allow a non-empty target (its full\n"
       "sync replaces everything it holds)",
       true, set_policy(c.policy, TargetPolicy::kFlush)},
      {"--merge", "", "", "",
       "load on top of a non-empty target; table keys replace existing ones, others stay; "
       "libraries replace those of the same name. Restore mode only; refused with `--follow`",
       "load into a non-empty target; table keys replace\n"
       "existing ones, other keys stay; function libraries\n"
       "replace those of the same name\n"
       "(without either, a non-empty target is refused, and\n"
       "so is a function library the target already has)",
       true, set_policy(c.policy, TargetPolicy::kMerge)},
      {"--atomic", "", "", "",
       "stage the table in spare DBs, swap it in at once; restore mode: the target shows its "
       "old data or the whole copy, never a mix ([atomic-loads.md](atomic-loads.md))",
       "restore mode: load each of the table's DBs into an\n"
       "empty staging DB (the highest-numbered DBs the table\n"
       "does not use; the target needs enough `databases`,\n"
       "and memory for both copies), then swap them all in\n"
       "at once once everything is loaded and checked:\n"
       "SWAPDB, the functions and the flush of the old data\n"
       "in one MULTI/EXEC. A failed sync flushes the staging\n"
       "DBs and leaves the target's data as it was. With\n"
       "--flush the old data stays visible until the swap;\n"
       "refuses --merge. Replica mode: accepted, adds nothing\n"
       "(Redis's own full sync already keeps the old data\n"
       "until the new copy is complete)",
       true, set_true(c.atomic)},
      {"--connect-timeout", "SECS", "30", "",
       "keep retrying the server this long while it is unreachable, has no table yet or is full",
       "keep retrying the server this long while it is\n"
       "unreachable, has no table yet or is full (default 30)",
       false, set_seconds(0, 86400, c.connect_timeout)},
      {"--io-timeout", "SECS", "30", "", "the longest wait for any answer once connected",
       "longest wait for any answer once connected (default 30)", false,
       set_seconds(1, 86400, c.io_timeout)},
      {"--chunk-size", "BYTES", "4M", "",
       "bytes per read (k/M); the client holds about in-flight + 15 read buffers",
       "bytes per read, suffix k/M allowed (default 4M; the\n"
       "client holds about (in-flight + 15) read buffers)",
       false, set_size(4096, control::kMaxReadLength, c.chunk_size)},
      {"--in-flight", "N", "8", "", "reads outstanding at once (the server grants at most 16)",
       "reads outstanding at once (default 8)", false, set_number(1, 1024, c.in_flight)},
      {"--retries", "N", "3", "",
       "reconnects after a lost connection: the sync resumes if the epoch is still served, else "
       "starts over on the new one",
       "reconnects after a lost connection (default 3); the\n"
       "sync resumes where it stopped if the server still\n"
       "serves the same epoch, else starts over on the new\n"
       "one (a partial copy is flushed first; with --merge\n"
       "it stops instead: exit 3)",
       false, set_number(0, 1000, c.retries)},
      {"--transport", "auto|tcp|verbs", "auto", "",
       "auto: verbs where it works, else TCP; verbs when a local RDMA device reaches the server "
       "and it accepts RDMA, else TCP; the log says which and why",
       "auto (default): verbs when a local RDMA device with\n"
       "an active port reaches the server and it accepts\n"
       "RDMA connections, else TCP; says which and why",
       true, set_choice(c.transport, {"auto", "tcp", "verbs"})},
      {"--no-load", "", "", "",
       "fetch and validate the table, load nothing; no Redis needed; prints a `fetched` line",
       "fetch and validate the whole table but load nothing;\n"
       "prints `fetched keys=N functions=L scripts=S\n"
       "table_bytes=B ... MBps=X`\n"
       "(the transfer alone, no Redis needed)",
       true, set_true(c.no_load)},
      {"--skip-module-data", "", "", "",
       "load a table whose master held module data that is not a key (`module_aux`); else exit 5",
       "load a table whose master held module data that is\n"
       "not a key (MODULE_AUX: the table cannot carry it);\n"
       "without this such a table is refused (exit 5)",
       false, set_true(c.skip_module_data)},
      {"--allow-missing-keys", "", "", "",
       "load a table that lacks keys the sidecar could not copy (`keys_lost`); else exit 5",
       "load a table that lacks keys the sidecar could not\n"
       "copy (--source scan: a DUMP that failed; its ready\n"
       "line's keys_lost=N); without this such a table is\n"
       "refused (exit 5)",
       false, set_true(c.allow_missing_keys)},
      {"--allow-lossy-conversion", "", "", "",
       "load values converted for an older target even where part of them is dropped, counting it; "
       "else exit 5 before anything is loaded ([versions.md](versions.md))",
       "the target reads an older RDB version than the\n"
       "master wrote, so values are converted for it; load\n"
       "them even where the target has no place for part\n"
       "of a value (hash field TTLs before Redis 7.4 /\n"
       "Valkey 9, stream consumers' active times before\n"
       "RDB 11), counting per kind what was dropped;\n"
       "without this such a table is refused (exit 5)\n"
       "before anything is loaded",
       false, set_true(c.allow_lossy_conversion)},
      {"--follow", "", "", "",
       "after the sync, follow the master's stream; apply it from the change log until "
       "SIGINT/SIGTERM, resyncing by itself when needed "
       "([replication-log.md](replication-log.md)); needs `--source psync`",
       "after the sync, keep the target in step with the\n"
       "master: tail rdma-server's change log (the master's\n"
       "replication stream) and apply it, until SIGINT or\n"
       "SIGTERM (which stop after the current batch, exit\n"
       "0). A follower that falls behind the log, or whose\n"
       "sidecar or master began a new history, resyncs\n"
       "from the newest table (flushing the target) on its\n"
       "own. Needs rdma-server --source psync (refused,\n"
       "exit 5, for a table from --source rdb).\n"
       "Without --mode (and --atomic) it loads and follows\n"
       "in replica mode, unless the target runs in cluster\n"
       "mode: a replica expires nothing by its own clock,\n"
       "it waits for the master's DEL. There the stream's\n"
       "bytes are forwarded verbatim down the target's\n"
       "replica link, so its replication offset moves\n"
       "exactly as the master's. In restore mode (a\n"
       "cluster node, or --mode restore) the target is a\n"
       "master and expires keys itself: keys expiring\n"
       "within 10 minutes of the load are held with a\n"
       "guard TTL until the follower has caught up, then\n"
       "given their own back unless the master's stream\n"
       "changed them (their user needs +pexpiretime)",
       true, set_true(c.follow)},
      {"--status-interval", "SECS", "5", "", "`--follow`: seconds between status lines (0: none)",
       "--follow: seconds between status lines (default 5;\n"
       "0: none)",
       false, set_number(0, 86400, c.status_interval_s)},
      {"--log-stall", "SECS", "35", "",
       "`--follow`: a change log that has not grown this long is stalled: stop, exit 3 (0: never); "
       "keep it above 3 of the master's `repl-ping-replica-period`",
       "--follow: a change log that has not grown for SECS\n"
       "is stalled (the sidecar's link to the master is\n"
       "stuck or was given up): stop, exit 3 (default 35:\n"
       "3 x the master's repl-ping-replica-period of 10 s,\n"
       "+ 5 s; raise it with the master's period; 0: never)",
       false, set_number(0, 86400, c.log_stall_s)},
      {"--handoff", "", "", "",
       "replica mode: hand the target to its master; catch up from the change log, then "
       "`REPLICAOF` the real master, which continues with a partial resync (checked, "
       "[replica-mode.md](replica-mode.md#handoff-clientreplicahandoff))",
       "replica mode: follow the change log until the target\n"
       "has caught up, then point it at the real master\n"
       "(REPLICAOF --master), which continues it with a\n"
       "partial resync; checks first that the master's\n"
       "backlog still covers the target's offset (if not,\n"
       "leaves the target alone and says how large\n"
       "repl-backlog-size must be), and verifies by the\n"
       "target's own INFO replication (its link to that\n"
       "host and port, its backlog kept) that the resync\n"
       "was partial.\n"
       "From an rdma-server --source rdb table: hands off\n"
       "at the file's repl-offset at once (no change log);\n"
       "refused (exit 5) when the file had no repl-id and\n"
       "repl-offset",
       true, set_true(c.handoff)},
      {"--master", "HOST:PORT", "", "", "`--handoff`: the master, as the target reaches it",
       "--handoff: the master, as the target reaches it", true, set_endpoint(c.master)},
      {"--master-auth-file", "FILE", "", "RDMA_CLIENT_MASTER_AUTH",
       "`--handoff`: credentials for reading the master's INFO (the target uses its own "
       "`masterauth`)",
       "--handoff: the master's credentials, for reading its\n"
       "INFO (else $RDMA_CLIENT_MASTER_AUTH); the target\n"
       "itself authenticates with its own masterauth",
       false, set_string(c.master_auth_file)},
      {"--linger", "", "", "",
       "after a run that ended well, keep answering `/healthz` and `/readyz` until SIGTERM "
       "(exit 0); for a container that would be restarted on exit "
       "([kubernetes.md](kubernetes.md))",
       "after a run that ended well (the sync, --handoff or\n"
       "--verify), keep running and answering /healthz and\n"
       "/readyz (ready: what was done) until SIGTERM or\n"
       "SIGINT, then exit 0: for a container restarted when\n"
       "it exits, which would otherwise sync again. Not with\n"
       "--follow, which runs until stopped anyway",
       false, set_true(c.linger)},
      {"--cpu", "LIST", "any", "",
       "run on these CPUs only; keep the client off the target's core "
       "([placement](operations.md#placement))",
       "run on these CPUs only (\"1\", \"2-3,6\"); give the\n"
       "target Redis other cores: a client sharing the\n"
       "target's core slows the load (docs/operations.md)",
       true, set_cpu_flag(c.cpus)},
      {"--huge-pages", "auto|on|off", "auto", "",
       "transparent huge pages for the read buffers, decided as for rdma-server",
       "transparent huge pages for the read buffers. auto\n"
       "(default): on, except in a VM whose balloon reports\n"
       "free memory to its host (see rdma-server --help-all)",
       false, set_huge_pages_flag(c.huge_pages)},
      {"--quiet", "", "", "", "no progress output", "no progress output", true, set_true(c.quiet)},
      {"--metrics", "[ADDR:]PORT", "off", "",
       "Prometheus metrics while running; also the probes `/healthz` and `/readyz` "
       "([metrics.md](metrics.md#health-probes))",
       "serve Prometheus metrics (text format) at\n"
       "http://ADDR:PORT/metrics while running, and the\n"
       "probes /healthz and /readyz (503 until the target\n"
       "is loaded); ADDR defaults to 127.0.0.1. Off by\n"
       "default. A port in use exits 2",
       true, set_metrics_flag(c.metrics)},
      {"--log-format", "text|json", "text", "",
       "the format of stderr's log lines ([operations.md](operations.md#logs))",
       "stderr's log lines: text (default),\n"
       "  2026-11-25T23:46:38.123Z rdma-client WARN ...\n"
       "or json, one object per line:\n"
       "  {\"ts\":\"...\",\"level\":\"warn\",\"program\":\"rdma-client\",\"msg\":\"...\"}",
       false, set_log_format_flag(c.log_format)},
      {"--verify", "", "", "",
       "compare `--redis` with `--source-redis` key by key; no sidecar ([verify.md](verify.md))",
       "compare --redis with --source-redis (see above)", true, set_true(c.verify)},
      {"--source-redis", "HOST:PORT", "", "", "`--verify`: the Redis the target was synced from",
       "--verify: the Redis the target was synced from", true, set_endpoint(c.source_redis)},
      {"--source-redis-auth-file", "FILE", "", "RDMA_CLIENT_SOURCE_AUTH",
       "`--verify`: its credentials",
       "--verify: its credentials, as --redis-auth-file\n"
       "(else $RDMA_CLIENT_SOURCE_AUTH)",
       false, set_string(c.source_redis_auth_file)},
      {"--sample", "N", "every key", "",
       "`--verify`: N random source keys instead of all; keys only the target has are not looked "
       "for",
       "--verify: N random source keys (RANDOMKEY, spread\n"
       "over the DBs by their size), not every key; does\n"
       "not look for keys only the target has",
       false, set_number(1, UINT64_MAX, c.verify_sample)},
      {"--ttl-tolerance-ms", "MS", "2000", "", "`--verify`: TTLs this close are equal",
       "--verify: TTLs this close are equal (default 2000:\n"
       "the two sides are read moments apart, and two hosts'\n"
       "clocks differ while a sync carries absolute expiries)",
       false, set_number(0, 86400000, c.ttl_tolerance_ms)},
      {"--max-differences", "N", "10", "", "`--verify`: difference lines printed (all are counted)",
       "--verify: difference lines to print (default 10;\n"
       "all are counted)",
       false, set_number(0, UINT64_MAX, c.max_differences)},
  };
  for (Flag& f : transport_tls_flags(c.tls, TlsRole::kClient)) flags.push_back(std::move(f));
  for (Flag& f : redis_tls_flags(c.redis_tls)) flags.push_back(std::move(f));
  for (Flag& f : version_and_help_flags(c.version, c.help)) flags.push_back(std::move(f));
  return flags;
}

std::string client_help(HelpKind kind) {
  ClientConfig c;
  return render_help(kind, kText, client_flags(c));
}

}  // namespace rrs
