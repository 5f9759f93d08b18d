#include "server/server_flags.h"

#include <chrono>
#include <cstdint>

#include "common/cli/shared_flags.h"

namespace rrs {

namespace {

// Seconds, or -1: keep the table.
FlagSetter set_table_retain(std::optional<std::chrono::seconds>& out) {
  return [&out](ArgReader& args, std::string_view, const std::string& v) {
    if (v == "-1") {
      out.reset();
    } else if (auto secs = parse_uint("--table-retain", v, 0, uint64_t{86400} * 365); secs.ok()) {
      out = std::chrono::seconds(*secs);
    } else {
      args.fail(secs.status().message() + " (or -1: keep the table)");
    }
  };
}

constexpr HelpText kText = {
    "rdma-server",
    "Usage: rdma-server [options]\n",
    // --help-all: before the flags.
    "Snapshots a Redis master (or reads an RDB file) into a mapping table and\n"
    "serves it to rdma-client replicas. Prints a line starting with \"ready\" once it\n"
    "serves (with --source psync, before any snapshot: the first client that asks\n"
    "for the table starts one), then one starting with \"published\" for each new\n"
    "table, and serves until SIGINT/SIGTERM.",
    // --help-all: after the flags.
    "Over verbs the table is registered (pinned) once per epoch: RLIMIT_MEMLOCK\n"
    "must cover it (`ulimit -l unlimited`, or LimitMEMLOCK=infinity under systemd),\n"
    "unless the process has CAP_IPC_LOCK; the error says so if not.\n"
    "\n"
    "SIGUSR1 asks for a new snapshot now, without the delay (psync; one sent during\n"
    "a snapshot is taken after it). The rdb source reads its file once; to serve a newer\n"
    "backup, restart rdma-server.\n"
    "\n"
    "With psync, a master that goes away mid-RDB is retried with backoff (1 s\n"
    "doubling to 30 s); after the first table, a lost link reconnects and asks to\n"
    "continue, and a full resync builds the next table while the current one is\n"
    "still served.\n"
    "\n"
    "Exit codes: 0 stopped by signal, 2 bad usage (including a non-loopback\n"
    "--listen without a shared secret, and an --rdb-file that cannot be opened),\n"
    "3 master unreachable, auth or PSYNC refused, or no RDMA device for\n"
    "--transport verbs, 4 an RDB this build cannot parse (or an RDB file that is\n"
    "truncated; also, while serving, a new history from the master whose RDB it\n"
    "cannot parse or whose table it cannot publish on every transport: its change\n"
    "log could never grow again, so it is marked superseded and the server exits),\n"
    "1 anything else (a port in use, a locked-memory limit too low,\n"
    "...; the message names it).\n",
    // --help: before the common flags.
    "Snapshots a Redis master (or reads an RDB file) into a mapping table and\n"
    "serves it to rdma-client replicas, until SIGINT/SIGTERM.",
};

}  // namespace

// Each entry: name, value, default, environment variable, brief (markdown,
// one line), --help-all's text, common, setter.
// NOLINTNEXTLINE(readability-function-size): a table, one entry per flag
std::vector<Flag> server_flags(ServerConfig& c, std::string& master_flag) {
  std::vector<Flag> flags = {
      {"--redis", "HOST:PORT", "127.0.0.1:6379", "",
       "the master to snapshot (or a replica of it: "
       "[snapshot-sources.md](snapshot-sources.md#a-replica-as-the-source)); refused with "
       "`--source rdb`",
       "master to snapshot (default 127.0.0.1:6379)", true,
       [&](ArgReader& a, std::string_view n, const std::string& v) {
         set_endpoint(c.redis)(a, n, v);
         master_flag = "--redis";
       }},
      {"--redis-auth-file", "FILE", "", "RDMA_SERVER_REDIS_AUTH", "the master's credentials",
       "master's credentials: \"password\" or \"user password\"\n"
       "on the first line (else $RDMA_SERVER_REDIS_AUTH)",
       true,
       [&](ArgReader&, std::string_view, const std::string& v) {
         c.redis_auth_file = v;
         master_flag = "--redis-auth-file";
       }},
      {"--listen", "ADDR", "127.0.0.1", "",
       "address to serve on; any non-loopback address needs `--auth-file` (exit 2 without)",
       "address to serve on (default 127.0.0.1). Any other\n"
       "address (0.0.0.0, a fabric address) needs a shared\n"
       "secret: whoever reads the table reads every key",
       true, set_string(c.listen_host)},
      {"--auth-file", "FILE", "", "RDMA_SIDECAR_SECRET",
       "the shared secret (above); a wrong one is refused and logged with the peer",
       "the shared secret (at least 16 bytes; first line\n"
       "of FILE, else $RDMA_SIDECAR_SECRET): a client must\n"
       "prove it holds it (HMAC-SHA256 challenge-response)\n"
       "before it learns anything about the table; give\n"
       "rdma-client the same. `openssl rand -hex 32` makes one",
       true, set_string(c.auth_file)},
      {"--port", "PORT", "12345", "",
       "port to serve on; verbs uses the same number in rdmacm's port space",
       "port to serve on (default 12345)", true, set_port(c.port)},
      {"--max-clients", "N", "64", "",
       "authenticated clients at once, per transport; more are told `server full` and retry until "
       "their `--connect-timeout`. Connections still in their handshake (10 s at most) have a "
       "budget of their own: 64, and 8 per peer address",
       "authenticated clients served at once, per\n"
       "transport; more are refused with \"server full\"\n"
       "(default 64). A connection takes a slot only once\n"
       "it has proved the secret; those still in their\n"
       "handshake (10 s at most) have their own budget: 64,\n"
       "and 8 from any one address",
       false, set_number(1, 100000, c.max_clients)},
      {"--idle-timeout", "SECS", "300", "",
       "drop a TCP client that sends no request this long (0: never); over verbs the keepalive "
       "decides",
       "drop a TCP client that sends no request for this\n"
       "long (default 300; 0: never). Verbs READs bypass\n"
       "the server's CPU: there the keepalive decides",
       false, set_seconds(0, uint64_t{86400} * 7, c.idle_timeout)},
      {"--source", "psync|scan|rdb", "psync", "",
       "where the table comes from; psync: the master's own full sync (point-in-time); scan: "
       "SCAN + DUMP (not point-in-time, for a master that forbids PSYNC); rdb: an RDB file "
       "([snapshot-sources.md](snapshot-sources.md))",
       "how to snapshot the master:\n"
       "  psync (default): as a replica does (PSYNC), the\n"
       "  master forks and streams its RDB, which is parsed\n"
       "  as it arrives; the table is the keyspace exactly\n"
       "  as of the replication offset printed in the ready\n"
       "  line. Afterwards the link stays open (REPLCONF ACK\n"
       "  every second) and the sidecar shows in the\n"
       "  master's INFO replication as a replica. Needs a\n"
       "  user allowed REPLCONF and PSYNC.\n"
       "  scan: SCAN + DUMP + PEXPIRETIME from the master's\n"
       "  main thread; not point-in-time. For a managed\n"
       "  Redis that forbids PSYNC.\n"
       "  rdb: no master at all: the table is the RDB file\n"
       "  --rdb-file names (a backup, RDB 1 to 12 or\n"
       "  Valkey's 80). When the file holds repl-id and\n"
       "  repl-offset (saved on a replica, or on a master\n"
       "  with a backlog), the table is at that offset, so\n"
       "  rdma-client --mode replica --handoff can continue\n"
       "  from the master while its backlog reaches back\n"
       "  there; else --handoff is refused. No change log:\n"
       "  rdma-client --follow is refused. Takes no --redis.",
       true, set_choice(c.source, {"psync", "scan", "rdb"})},
      {"--rdb-file", "FILE", "", "",
       "the RDB file to serve; `--source rdb` only, and required there; read once at start",
       "the RDB file --source rdb reads (required there)", true, set_string(c.rdb_file)},
      {"--transport", "auto|tcp|verbs", "auto", "",
       "auto: TCP, plus verbs where RDMA works; verbs on the same port number when an RDMA "
       "device has an active port; `verbs` fails at start without one",
       "auto (default): TCP, plus verbs (rdmacm, same port\n"
       "number) when an RDMA device has an active port",
       true,
       set_parsed(c.transport,
                  [](std::string_view, const std::string& v) { return parse_transport(v); })},
      {"--scan-count", "N", "1000", "", "`--source scan`: the SCAN COUNT hint",
       "SCAN COUNT hint per round trip (default 1000)", false,
       set_number(1, 1000000, c.scan_count)},
      {"--log-size", "BYTES", "64M", "",
       "psync: the change log followers read; the ring of the master's stream (k/M/G; 0: none). "
       "A follower further behind resyncs; size it like `repl-backlog-size` "
       "([operations.md](operations.md#sizing))",
       "psync: the change log, a ring holding the master's\n"
       "replication stream that `rdma-client --follow`\n"
       "reads (default 64M; k/M/G suffixes; 0: none). A\n"
       "follower further behind than this must resync.",
       true, set_size(0, uint64_t{1} << 40, c.log_size)},
      {"--snapshot-delay", "SECS", "3", "",
       "psync: the wait before a needed snapshot is asked of the master, so that replicas arriving "
       "together share one fork (0: none); clients are told `snapshot pending` meanwhile",
       "psync: a snapshot forks the master, so one is taken\n"
       "only when a client needs it: there is no table\n"
       "yet, or the change log has moved past the table\n"
       "(a new replica could not follow from it). The\n"
       "first such client starts a wait of SECS (default\n"
       "3; 0: none) before the master is asked, so that\n"
       "replicas arriving together share one fork, like\n"
       "Redis's repl-diskless-sync-delay. Clients are told\n"
       "\"snapshot pending\" meanwhile and wait for it",
       false,
       set_number_u64(0, 3600, [&](uint64_t s) { c.snapshot_delay = std::chrono::seconds(s); })},
      {"--snapshot-at-start", "", "", "",
       "psync: take the first snapshot at start (one fork now) instead of when the first client "
       "asks",
       "psync: take the first snapshot at start (one fork\n"
       "now), so the first client does not wait for it",
       false, set_true(c.snapshot_at_start)},
      {"--table-retain", "SECS", "60", "",
       "psync: give the table's memory back once no client has read it this long (-1: keep; at "
       "least 5; never with `--log-size 0`); prints `released`",
       "psync: give the table's memory back once no client\n"
       "has read it for SECS (default 60; -1: keep it; at\n"
       "least 5 s, for the clients still arriving; never\n"
       "with --log-size 0).\n"
       "Followers read only the change log, which goes on;\n"
       "the next client that needs a table starts a new\n"
       "snapshot. Prints \"released epoch=E bytes=B\"",
       false, set_table_retain(c.table_retain)},
      {"--snapshot-every", "BYTES", "0 (never)", "",
       "psync: also take a snapshot whenever the log has grown this much past the table, needed or "
       "not (one more fork); below `--log-size`",
       "psync: also take a new snapshot (one more fork of\n"
       "the master, on a second link) whenever the log has\n"
       "grown this much past the current table, needed or\n"
       "not (default 0: never). Below --log-size. Followers\n"
       "carry on in the same log; new replicas start from\n"
       "the newest table.",
       false, set_size(0, uint64_t{1} << 40, c.snapshot_every)},
      {"--retire-grace", "SECS", "60", "",
       "verbs: how long a replaced epoch stays registered for clients still reading it",
       "verbs: how long a replaced epoch stays registered\n"
       "for clients still connected to it and reading its\n"
       "table (default 60); followers reconnect at once",
       false, set_seconds(0, 86400, c.retire_grace)},
      {"--cpu", "LIST", "any", "",
       "run on these CPUs only (`1`, `2-3,6`); a CPU the process may not use is exit 2 "
       "([placement](operations.md#placement))",
       "run on these CPUs only (\"1\", \"2-3,6\"): keep the\n"
       "sidecar off the cores its master serves clients on",
       true, set_cpu_flag(c.cpus)},
      {"--huge-pages", "auto|on|off", "auto", "",
       "transparent huge pages for the table; auto: on, except in a VM whose balloon reports free "
       "memory to its host ([placement](operations.md#placement))",
       "transparent huge pages for the table. auto\n"
       "(default): on, except in a VM whose balloon reports\n"
       "free memory to its host, where a huge page's first\n"
       "touch costs several times a small page's (the log\n"
       "says which)",
       false, set_huge_pages_flag(c.huge_pages)},
      {"--metrics", "[ADDR:]PORT", "off", "",
       "serve Prometheus metrics; at `http://ADDR:PORT/metrics` (ADDR 127.0.0.1), with the "
       "probes `/healthz` and `/readyz`; a port in use is exit 2 "
       "([metrics.md](metrics.md#health-probes))",
       "serve Prometheus metrics (text format) at\n"
       "http://ADDR:PORT/metrics, and the probes /healthz\n"
       "and /readyz (503 until the first table or, on\n"
       "demand, the master is ready); ADDR defaults to\n"
       "127.0.0.1. Off by default. A port in use exits 2",
       true, set_metrics_flag(c.metrics)},
      {"--log-format", "text|json", "text", "",
       "the format of stderr's log lines ([operations.md](operations.md#logs))",
       "stderr's log lines: text (default),\n"
       "  2026-11-25T23:46:38.123Z rdma-server WARN ...\n"
       "or json, one object per line:\n"
       "  {\"ts\":\"...\",\"level\":\"warn\",\"program\":\"rdma-server\",\"msg\":\"...\"}",
       true, set_log_format_flag(c.log_format)},
  };
  for (Flag& f : transport_tls_flags(c.tls, TlsRole::kServer)) flags.push_back(std::move(f));
  for (Flag& f : redis_tls_flags(c.redis_tls)) flags.push_back(std::move(f));
  for (Flag& f : version_and_help_flags(c.version, c.help)) flags.push_back(std::move(f));
  return flags;
}

std::string server_help(HelpKind kind) {
  ServerConfig c;
  std::string master_flag;
  return render_help(kind, kText, server_flags(c, master_flag));
}

}  // namespace rrs
