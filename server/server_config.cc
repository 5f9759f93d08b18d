#include "server/server_config.h"

#include <optional>

#include "common/cli/args.h"
#include "common/cli/cpu_list.h"
#include "common/cli/huge_pages_flag.h"
#include "common/cli/metrics_flag.h"

namespace rrs {

Result<TransportChoice> parse_transport(std::string_view text) {
  if (text == "auto") return TransportChoice::kAuto;
  if (text == "tcp") return TransportChoice::kTcp;
  if (text == "verbs") return TransportChoice::kVerbs;
  return Status::error("--transport",
                       "expected auto, tcp or verbs, got '" + std::string(text) + "'");
}

namespace {

constexpr const char* kUsage = R"(Usage: rdma-server [options]

Snapshots a Redis master (or reads an RDB file) into a mapping table and
serves it to rdma-client replicas. Prints a line starting with "ready" once it
serves (with --source psync, before any snapshot: the first client that asks
for the table starts one), then one starting with "published" for each new
table, and serves until SIGINT/SIGTERM.

Options:
  --redis HOST:PORT       master to snapshot (default 127.0.0.1:6379)
  --redis-auth-file FILE  master's credentials: "password" or "user password"
                          on the first line (else $RDMA_SERVER_REDIS_AUTH)
  --listen ADDR           address to serve on (default 127.0.0.1). Any other
                          address (0.0.0.0, a fabric address) needs a shared
                          secret: whoever reads the table reads every key
  --auth-file FILE        the shared secret (at least 16 bytes; first line
                          of FILE, else $RDMA_SIDECAR_SECRET): a client must
                          prove it holds it (HMAC-SHA256 challenge-response)
                          before it learns anything about the table; give
                          rdma-client the same. `openssl rand -hex 32` makes one
  --port PORT             port to serve on (default 12345)
  --max-clients N         authenticated clients served at once, per
                          transport; more are refused with "server full"
                          (default 64). A connection takes a slot only once
                          it has proved the secret; those still in their
                          handshake (10 s at most) have their own budget: 64,
                          and 8 from any one address
  --idle-timeout SECS     drop a TCP client that sends no request for this
                          long (default 300; 0: never). Verbs READs bypass
                          the server's CPU: there the keepalive decides
  --source psync|scan|rdb how to snapshot the master:
                            psync (default): as a replica does (PSYNC), the
                            master forks and streams its RDB, which is parsed
                            as it arrives; the table is the keyspace exactly
                            as of the replication offset printed in the ready
                            line. Afterwards the link stays open (REPLCONF ACK
                            every second) and the sidecar shows in the
                            master's INFO replication as a replica. Needs a
                            user allowed REPLCONF and PSYNC.
                            scan: SCAN + DUMP + PEXPIRETIME from the master's
                            main thread; not point-in-time. For a managed
                            Redis that forbids PSYNC.
                            rdb: no master at all: the table is the RDB file
                            --rdb-file names (a backup, RDB 1 to 12 or
                            Valkey's 80). When the file holds repl-id and
                            repl-offset (saved on a replica, or on a master
                            with a backlog), the table is at that offset, so
                            rdma-client --mode replica --handoff can continue
                            from the master while its backlog reaches back
                            there; else --handoff is refused. No change log:
                            rdma-client --follow is refused. Takes no --redis.
  --rdb-file FILE         the RDB file --source rdb reads (required there)
  --transport auto|tcp|verbs
                          auto (default): TCP, plus verbs (rdmacm, same port
                          number) when an RDMA device has an active port
  --scan-count N          SCAN COUNT hint per round trip (default 1000)
  --log-size BYTES        psync: the change log, a ring holding the master's
                          replication stream that `rdma-client --follow`
                          reads (default 64M; k/M/G suffixes; 0: none). A
                          follower further behind than this must resync.
  --snapshot-delay SECS   psync: a snapshot forks the master, so one is taken
                          only when a client needs it: there is no table
                          yet, or the change log has moved past the table
                          (a new replica could not follow from it). The
                          first such client starts a wait of SECS (default
                          3; 0: none) before the master is asked, so that
                          replicas arriving together share one fork, like
                          Redis's repl-diskless-sync-delay. Clients are told
                          "snapshot pending" meanwhile and wait for it
  --snapshot-at-start     psync: take the first snapshot at start (one fork
                          now), so the first client does not wait for it
  --table-retain SECS     psync: give the table's memory back once no client
                          has read it for SECS (default 60; -1: keep it; at
                          least 5 s, for the clients still arriving; never
                          with --log-size 0).
                          Followers read only the change log, which goes on;
                          the next client that needs a table starts a new
                          snapshot. Prints "released epoch=E bytes=B"
  --snapshot-every BYTES  psync: also take a new snapshot (one more fork of
                          the master, on a second link) whenever the log has
                          grown this much past the current table, needed or
                          not (default 0: never). Below --log-size. Followers
                          carry on in the same log; new replicas start from
                          the newest table.
  --retire-grace SECS     verbs: how long a replaced epoch stays registered
                          for clients still connected to it and reading its
                          table (default 60); followers reconnect at once
  --cpu LIST              run on these CPUs only ("1", "2-3,6"): keep the
                          sidecar off the cores its master serves clients on
  --huge-pages auto|on|off
                          transparent huge pages for the table. auto
                          (default): on, except in a VM whose balloon reports
                          free memory to its host, where a huge page's first
                          touch costs several times a small page's (the log
                          says which)
  --metrics [ADDR:]PORT   serve Prometheus metrics (text format) at
                          http://ADDR:PORT/metrics; ADDR defaults to
                          127.0.0.1. Off by default. A port in use exits 2
  --log-format text|json  stderr's log lines: text (default),
                            2026-11-25T23:46:38.123Z rdma-server WARN ...
                          or json, one object per line:
                            {"ts":"...","level":"warn","program":"rdma-server","msg":"..."}
  --version               the release and commit, the wire formats and RDB
                          versions it speaks, whether verbs is available
  -h, --help              this text

Over verbs the table is registered (pinned) once per epoch: RLIMIT_MEMLOCK
must cover it (`ulimit -l unlimited`, or LimitMEMLOCK=infinity under systemd),
unless the process has CAP_IPC_LOCK; the error says so if not.

SIGUSR1 asks for a new snapshot now, without the delay (psync; one sent during
a snapshot is taken after it). The rdb source reads its file once; to serve a newer
backup, restart rdma-server.

With psync, a master that goes away mid-RDB is retried with backoff (1 s
doubling to 30 s); after the first table, a lost link reconnects and asks to
continue, and a full resync builds the next table while the current one is
still served.

Exit codes: 0 stopped by signal, 2 bad usage (including a non-loopback
--listen without a shared secret, and an --rdb-file that cannot be opened),
3 master unreachable, auth or PSYNC refused, or no RDMA device for
--transport verbs, 4 an RDB this build cannot parse (or an RDB file that is
truncated; also, while serving, a new history from the master whose RDB it
cannot parse or whose table it cannot publish on every transport: its change
log could never grow again, so it is marked superseded and the server exits),
1 anything else (a port in use, a locked-memory limit too low,
...; the message names it).
)";

// --source rdb reads a file instead of a master: it needs --rdb-file, and a
// flag naming a master would be ignored, so it is refused; --rdb-file is
// read by --source rdb only.
Status check_source(const ServerConfig& c, const std::string& master_flag) {
  if (c.source == "rdb" && c.rdb_file.empty())
    return Status::error("arguments", "--source rdb needs --rdb-file FILE: the RDB file to serve");
  if (c.source == "rdb" && !master_flag.empty())
    return Status::error("arguments",
                         "--source rdb reads no master, only --rdb-file: drop " + master_flag);
  if (c.source != "rdb" && !c.rdb_file.empty())
    return Status::error("arguments", "--rdb-file is read by --source rdb only (the source is " +
                                          c.source + "): add --source rdb, or drop --rdb-file");
  return {};
}

}  // namespace

const char* server_usage() { return kUsage; }

Result<ServerConfig> parse_server_args(int argc, char** argv) {
  ServerConfig c;
  ArgReader args(argc, argv);
  std::string master_flag;  // the last flag that names a master, if any
  std::string v;
  while (!args.done() && args.error().empty()) {
    if (args.flag("-h") || args.flag("--help")) {
      c.help = true;
    } else if (args.flag("--version")) {
      c.version = true;
    } else if (args.endpoint("--redis", c.redis)) {
      master_flag = "--redis";
    } else if (args.option("--redis-auth-file", c.redis_auth_file)) {
      master_flag = "--redis-auth-file";
    } else if (args.port("--port", c.port) || args.option("--rdb-file", c.rdb_file) ||
               args.option("--listen", c.listen_host) || args.option("--auth-file", c.auth_file) ||
               args.number("--max-clients", 1, 100000, c.max_clients) ||
               args.number("--scan-count", 1, 1000000, c.scan_count) ||
               args.size("--log-size", 0, uint64_t{1} << 40, c.log_size) ||
               args.size("--snapshot-every", 0, uint64_t{1} << 40, c.snapshot_every) ||
               metrics_option(args, c.metrics) || huge_pages_option(args, c.huge_pages)) {
    } else if (args.option("--table-retain", v)) {
      if (v == "-1") {
        c.table_retain.reset();
      } else if (auto secs = parse_uint("--table-retain", v, 0, uint64_t{86400} * 365); secs.ok()) {
        c.table_retain = std::chrono::seconds(*secs);
      } else {
        args.fail(secs.status().message() + " (or -1: keep the table)");
      }
    } else if (args.flag("--snapshot-at-start")) {
      c.snapshot_at_start = true;
    } else if (uint64_t secs = 0; args.number("--snapshot-delay", 0, 3600, secs)) {
      c.snapshot_delay = std::chrono::seconds(secs);
    } else if (uint64_t idle = 0; args.number("--idle-timeout", 0, uint64_t{86400} * 7, idle)) {
      c.idle_timeout = std::chrono::seconds(idle);
    } else if (uint64_t grace = 0; args.number("--retire-grace", 0, 86400, grace)) {
      c.retire_grace = std::chrono::seconds(grace);
    } else if (args.option("--source", v)) {
      if (v != "scan" && v != "psync" && v != "rdb")
        args.fail("--source: expected psync, scan or rdb, got '" + v + "'");
      c.source = v;
    } else if (args.option("--transport", v)) {
      auto t = parse_transport(v);
      if (t.ok())
        c.transport = *t;
      else
        args.fail(t.status().message());
    } else if (args.option("--log-format", v)) {
      if (auto f = log::parse_format(v))
        c.log_format = *f;
      else
        args.fail("--log-format: expected text or json, got '" + v + "'");
    } else if (args.option("--cpu", v)) {
      auto cpus = parse_cpu_list("--cpu", v);
      if (cpus.ok())
        c.cpus = std::move(*cpus);
      else
        args.fail(cpus.status().message());
    } else {
      args.unknown();
    }
  }
  if (!args.error().empty()) return Status::error("arguments", args.error());
  RRS_RETURN_IF_ERROR(check_source(c, master_flag));
  if (c.log_size && c.snapshot_every >= c.log_size)
    return Status::error("arguments", "--snapshot-every must be below --log-size (" +
                                          std::to_string(c.log_size) +
                                          "), or new replicas could find the newest table older "
                                          "than the log reaches");
  return c;
}

}  // namespace rrs
