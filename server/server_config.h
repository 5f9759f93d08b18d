// rdma-server's settings: one struct, defaults here, parsed from argv.
#pragma once

#include <chrono>
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

enum class TransportChoice { kAuto, kTcp, kVerbs };
Result<TransportChoice> parse_transport(std::string_view text);

struct ServerConfig {
  // --redis: the master to snapshot.
  Endpoint redis{"127.0.0.1", 6379};
  // --redis-auth-file, else $RDMA_SERVER_REDIS_AUTH: "password" or "user password".
  std::string redis_auth_file;
  // --redis-tls and its files: TLS to the master (PSYNC and SCAN alike).
  TlsOptions redis_tls;
  // --tls and its files: the TCP transport over TLS 1.3.
  TlsOptions tls;
  // --listen: loopback by default, like Redis's own `bind`, because the table
  // is the whole keyspace. Anything else needs a shared secret.
  std::string listen_host = "127.0.0.1";
  // --auth-file, else $RDMA_SIDECAR_SECRET: the shared secret clients must
  // prove they hold (HMAC-SHA256 challenge) before they learn any rkey.
  std::string auth_file;
  // --max-clients: more are refused with "server full" (per transport).
  uint32_t max_clients = 64;
  // --idle-timeout: a TCP client with no request for this long is dropped.
  std::chrono::seconds idle_timeout{300};
  // --port: 12345, the seed prototype's port.
  uint16_t port = 12345;
  // --source: "psync" (a replica's full sync), "scan" (SCAN + DUMP) or
  // "rdb" (an RDB file, --rdb-file; no master at all).
  std::string source = "psync";
  // --rdb-file: the RDB file --source rdb reads.
  std::string rdb_file;
  // --transport: auto serves TCP, and verbs too when an RDMA device is up.
  TransportChoice transport = TransportChoice::kAuto;
  // --scan-count: SCAN COUNT hint, keys per round trip to the master.
  uint32_t scan_count = 1000;
  // --log-size: the change log's ring (psync), which replicas following the
  // master read; a follower more than this far behind must resync. 64 MiB
  // holds about 25 s of a 20k writes/s load of 100-byte values. 0: no log.
  uint64_t log_size = 64u << 20;
  // --snapshot-every: also take a new snapshot (the master forks once) when
  // the log has grown this much past the current table. 0 (default): only
  // when a client needs one, or on SIGUSR1.
  uint64_t snapshot_every = 0;
  // --snapshot-at-start: psync takes its first snapshot when rdma-server
  // starts (one fork now, so the first client does not wait for it), not
  // when the first client asks.
  bool snapshot_at_start = false;
  // --snapshot-delay: between the first client that needs a snapshot and
  // asking the master for it, so replicas arriving together share one fork
  // (like Redis's repl-diskless-sync-delay).
  std::chrono::milliseconds snapshot_delay{3000};
  // --table-retain: psync gives the table's memory back once no client has
  // read it for this long (followers read only the change log, which goes
  // on); a burst of replicas within it shares the table. nullopt (-1): keep
  // it for as long as it is served.
  std::optional<std::chrono::seconds> table_retain = std::chrono::seconds(60);
  // --retire-grace: how long a replaced epoch stays readable over verbs for
  // a client that was given it and is still connected (TCP answers reads
  // already queued). A follower then reconnects and finds its log again.
  std::chrono::seconds retire_grace{60};
  // --cpu LIST: the CPUs every thread of the sidecar runs on (empty: any).
  std::vector<int> cpus;
  // --huge-pages: whether the table asks for transparent huge pages.
  HugePages huge_pages = HugePages::kAuto;
  // --metrics ADDR:PORT (or PORT, on loopback): serve Prometheus metrics at
  // http://ADDR:PORT/metrics. Off when empty.
  std::optional<Endpoint> metrics;
  // --log-format: stderr's lines as text or as one JSON object each.
  log::Format log_format = log::Format::kText;
  HelpKind help = HelpKind::kNone;  // -h/--help, --help-all, --help-markdown
  bool version = false;             // --version
};

inline constexpr const char* kServerAuthEnv = "RDMA_SERVER_REDIS_AUTH";

// Parses argv; a failure's reason is the message to print before the usage.
Result<ServerConfig> parse_server_args(int argc, char** argv);

}  // namespace rrs
