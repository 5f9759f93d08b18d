#include "server/server_config.h"

#include <optional>

#include "common/cli/args.h"
#include "common/cli/cpu_list.h"

namespace rrs {

Result<TransportChoice> parse_transport(std::string_view text) {
  if (text == "auto") return TransportChoice::kAuto;
  if (text == "tcp") return TransportChoice::kTcp;
  if (text == "verbs") return TransportChoice::kVerbs;
  return Status::error("--transport",
                       "expected auto, tcp or verbs, got '" + std::string(text) + "'");
}

const char* server_usage() {
  return R"(Usage: rdma-server [options]

Snapshots a Redis master into a mapping table and serves it to rdma-client
replicas. Prints a line containing "ready" when the table is published, then
serves until SIGINT/SIGTERM.

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
  --max-clients N         clients served at once, per transport; more are
                          refused with "server full" (default 64)
  --idle-timeout SECS     drop a TCP client that sends no request for this
                          long (default 300; 0: never). Verbs READs bypass
                          the server's CPU: there the keepalive decides
  --source psync|scan     how to snapshot the master:
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
  --transport auto|tcp|verbs
                          auto (default): TCP, plus verbs (rdmacm, same port
                          number) when an RDMA device has an active port
  --scan-count N          SCAN COUNT hint per round trip (default 1000)
  --log-size BYTES        psync: the change log, a ring holding the master's
                          replication stream that `rdma-client --follow`
                          reads (default 64M; k/M/G suffixes; 0: none). A
                          follower further behind than this must resync.
  --snapshot-every BYTES  psync: take a new snapshot (one more fork of the
                          master, on a second link) when the log has grown
                          this much past the current table (default 3/4 of
                          --log-size; 0: only on SIGUSR1). Followers carry on
                          in the same log; new replicas start from it.
  --retire-grace SECS     verbs: how long a replaced epoch stays registered
                          for clients still connected to it (default 60)
  --cpu LIST              run on these CPUs only ("1", "2-3,6"): keep the
                          sidecar off the cores its master serves clients on
  -h, --help              this text

Over verbs the table is registered (pinned) once per epoch: RLIMIT_MEMLOCK
must cover it (`ulimit -l unlimited`, or LimitMEMLOCK=infinity under systemd),
unless the process has CAP_IPC_LOCK; the error says so if not.

SIGUSR1 asks for a new snapshot now (psync).

With psync, a master that goes away mid-RDB is retried with backoff (1 s
doubling to 30 s); after the first table, a lost link reconnects and asks to
continue, and a full resync builds the next table while the current one is
still served.

Exit codes: 0 stopped by signal, 2 bad usage (including a non-loopback
--listen without a shared secret), 3 master unreachable, auth or
PSYNC refused, or no RDMA device for --transport verbs, 4 an RDB this build
cannot parse, 1 anything else (a port in use, a locked-memory limit too low,
...; the message names it).
)";
}

Result<ServerConfig> parse_server_args(int argc, char** argv) {
  ServerConfig c;
  ArgReader args(argc, argv);
  std::optional<uint64_t> snapshot_every;  // default: from --log-size
  std::string v;
  while (!args.done() && args.error().empty()) {
    if (args.flag("-h") || args.flag("--help")) {
      c.help = true;
    } else if (args.endpoint("--redis", c.redis) || args.port("--port", c.port) ||
               args.option("--redis-auth-file", c.redis_auth_file) ||
               args.option("--listen", c.listen_host) || args.option("--auth-file", c.auth_file) ||
               args.number("--max-clients", 1, 100000, c.max_clients) ||
               args.number("--scan-count", 1, 1000000, c.scan_count) ||
               args.size("--log-size", 0, uint64_t{1} << 40, c.log_size)) {
    } else if (uint64_t every = 0; args.size("--snapshot-every", 0, uint64_t{1} << 40, every)) {
      snapshot_every = every;
    } else if (uint64_t idle = 0; args.number("--idle-timeout", 0, uint64_t{86400} * 7, idle)) {
      c.idle_timeout = std::chrono::seconds(idle);
    } else if (uint64_t grace = 0; args.number("--retire-grace", 0, 86400, grace)) {
      c.retire_grace = std::chrono::seconds(grace);
    } else if (args.option("--source", v)) {
      if (v != "scan" && v != "psync")
        args.fail("--source: expected psync or scan, got '" + v + "'");
      c.source = v;
    } else if (args.option("--transport", v)) {
      auto t = parse_transport(v);
      if (t.ok())
        c.transport = *t;
      else
        args.fail(t.status().message());
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
  c.snapshot_every = snapshot_every.value_or(c.log_size / 4 * 3);
  if (c.log_size && c.snapshot_every >= c.log_size)
    return Status::error("arguments", "--snapshot-every must be below --log-size (" +
                                          std::to_string(c.log_size) +
                                          "), or new replicas could find the newest table older "
                                          "than the log reaches");
  return c;
}

}  // namespace rrs
