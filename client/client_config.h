// rdma-client's settings: one struct, defaults here, parsed from argv.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/log_line.h"
#include "common/base/status.h"
#include "common/cli/flag_table.h"
#include "common/net/endpoint.h"
#include "common/table/huge_pages.h"
#include "common/tls/tls_context.h"

namespace rrs {

enum class TargetPolicy {
  kRequireEmpty,  // default: refuse a target that holds any key; FUNCTION RESTORE ... APPEND
  kFlush,         // --flush: FLUSHALL the target first; FUNCTION RESTORE ... FLUSH
  kMerge,         // --merge: load on top; table keys (and libraries) replace existing ones
};

enum class IngestMode {
  kRestore,  // default: pipelined RESTORE; the target stays what it was (a master)
  kReplica,  // --mode replica: the target becomes a replica of the client,
             // which streams it the table as an RDB, then the master's stream
};

struct ClientConfig {
  // <ip> <port>: the rdma-server to read from.
  Endpoint server;
  // --cluster: the target (--redis) is a cluster's seed node, and the
  // positional arguments are HOST:PORT of every source shard's rdma-server.
  bool cluster = false;
  std::vector<Endpoint> sidecars;
  // --redis: the replica Redis to load into.
  Endpoint redis{"127.0.0.1", 6379};
  // --redis-auth-file, else $RDMA_CLIENT_REDIS_AUTH: "password" or "user password".
  std::string redis_auth_file;
  // --redis-tls and its files: TLS to the target and every other Redis the
  // client connects to (the master of --handoff, --source-redis, nodes).
  TlsOptions redis_tls;
  // --tls and its files: the TCP transport over TLS 1.3.
  TlsOptions tls;
  // --auth-file, else $RDMA_SIDECAR_SECRET: the sidecar's shared secret.
  // main() loads it into `secret` before anything connects.
  std::string auth_file;
  std::optional<std::string> secret;
  // The --tls context, made by main() from `tls` before anything connects;
  // null without --tls.
  std::shared_ptr<const TlsContext> transport_tls;
  TargetPolicy policy = TargetPolicy::kRequireEmpty;
  // --atomic (restore mode): load into staging DBs, then SWAPDB them all in
  // at once (MULTI/EXEC) once the whole table is loaded and checked; a failed
  // sync leaves the target's data as it was. Replica mode: nothing to add.
  bool atomic = false;
  // --connect-timeout: how long to keep retrying the server, so the client
  // may be started before the server has published its table.
  std::chrono::seconds connect_timeout{30};
  // --io-timeout: the longest wait for any single answer once connected.
  std::chrono::seconds io_timeout{30};
  // --chunk-size: bytes per READ; large enough to amortize a round trip. On
  // rxe 4 MiB READs ran at 85-90% of ib_read_bw, 1 MiB ones at about 70%
  // (bench/results/2026-11-22-vm-verbs.md); an HCA is indifferent above 64 KiB.
  uint32_t chunk_size = 4u << 20;
  // --in-flight: READs outstanding at once (capped by what the server allows).
  uint32_t in_flight = 8;
  // --retries: reconnects after a lost connection before giving up; the
  // sync resumes where it stopped if the server still serves the same epoch.
  uint32_t retries = 3;
  // --transport: auto (verbs if reachable, else TCP), tcp, or verbs.
  std::string transport = "auto";
  // --no-load: fetch and validate the table, load nothing (transfer alone).
  bool no_load = false;
  // --skip-module-data: load a table whose master held module data that is
  // not a key (MODULE_AUX), which the table cannot carry; refused without.
  bool skip_module_data = false;
  // --allow-missing-keys: load a table that lacks keys the sidecar listed
  // and could not copy (header keys_lost: a scan source's failed DUMPs);
  // refused without.
  bool allow_missing_keys = false;
  // --allow-lossy-conversion: load values converted for an older target even
  // when the conversion drops what it cannot hold (field TTLs, consumers'
  // active times), counted per kind; refused without.
  bool allow_lossy_conversion = false;
  // --quiet: no progress output, only the summary and errors.
  bool quiet = false;
  // --cpu LIST: the CPUs every thread of the client runs on (empty: any);
  // keeps it off the target's core.
  std::vector<int> cpus;
  // --huge-pages: whether the read buffers ask for transparent huge pages.
  HugePages huge_pages = HugePages::kAuto;
  // --follow: after the sync, keep applying the master's stream from the
  // sidecar's change log until SIGINT/SIGTERM.
  bool follow = false;
  IngestMode mode = IngestMode::kRestore;
  bool mode_given = false;  // --mode was on the command line (see --follow)
  // --handoff (replica mode): once the target has caught up, point it at the
  // real master, which continues it with a partial resync.
  bool handoff = false;
  // --master: the real master as the target reaches it (--handoff needs it).
  Endpoint master{"", 0};
  // --master-auth-file, else $RDMA_CLIENT_MASTER_AUTH: for --handoff's checks
  // of the master's backlog and sync counters.
  std::string master_auth_file;
  // --linger: after a run that ended well, keep answering /healthz and
  // /readyz until SIGINT/SIGTERM (a container restarted on exit would sync
  // again).
  bool linger = false;
  // --status-interval: seconds between follow mode's status lines (0: none).
  uint32_t status_interval_s = 5;
  // --log-stall: seconds a follower waits for the change log to grow before
  // it calls the log stalled and exits 3 (0: never). A live log always
  // grows: the master pings its replicas, the sidecar among them, every
  // repl-ping-replica-period (10 s by default); 3 periods and a margin.
  uint32_t log_stall_s = 35;
  // --verify: compare the target (--redis) with the Redis it was synced from
  // (--source-redis), key by key (client/verify/); no sidecar involved.
  bool verify = false;
  Endpoint source_redis{"", 0};
  // --source-redis-auth-file, else $RDMA_CLIENT_SOURCE_AUTH: as --redis-auth-file.
  std::string source_redis_auth_file;
  // --sample N: compare N random source keys instead of all (0: all).
  uint64_t verify_sample = 0;
  // --ttl-tolerance-ms: how far two TTLs may be apart and still be equal.
  // PTTL is read on the two sides moments apart (a batch's round trip, more
  // on a loaded machine), and a sync carries absolute expiries, so two hosts'
  // clock offset shows too: 2 s covers both without hiding a lost TTL.
  uint64_t ttl_tolerance_ms = 2000;
  // --max-differences: how many difference lines to print (all are counted).
  uint64_t max_differences = 10;
  // --metrics ADDR:PORT (or PORT, on loopback): serve Prometheus metrics at
  // http://ADDR:PORT/metrics while running. Off when empty.
  std::optional<Endpoint> metrics;
  // --log-format: stderr's lines as text or as one JSON object each.
  log::Format log_format = log::Format::kText;
  HelpKind help = HelpKind::kNone;  // -h/--help, --help-all, --help-markdown
  bool version = false;             // --version
};

inline constexpr const char* kClientAuthEnv = "RDMA_CLIENT_REDIS_AUTH";
inline constexpr const char* kMasterAuthEnv = "RDMA_CLIENT_MASTER_AUTH";
inline constexpr const char* kSourceAuthEnv = "RDMA_CLIENT_SOURCE_AUTH";

Result<ClientConfig> parse_client_args(int argc, char** argv);

}  // namespace rrs
