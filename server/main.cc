// rdma-server: snapshot the master, publish the table, serve replicas.
// Every step returns a Status; only main() turns it into an exit code.
#include <event2/event.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "common/auth/auth.h"
#include "common/base/clock.h"
#include "common/base/log.h"
#include "common/cli/cpu_list.h"
#include "common/cli/exit_codes.h"
#include "common/cli/version.h"
#include "common/metrics/http_endpoint.h"
#include "common/table/huge_pages.h"
#include "common/transport/tcp/table_server.h"
#include "common/transport/verbs/device.h"
#include "common/transport/verbs/table_server.h"
#include "server/epoch_keeper.h"
#include "server/psync_source.h"
#include "server/rdb_file_source.h"
#include "server/scan_source.h"
#include "server/server_config.h"
#include "server/server_flags.h"
#include "server/server_metrics.h"
#include "server/server_readiness.h"
#include "server/test_hooks.h"

using namespace rrs;

namespace {

// TCP always serves unless --transport verbs; verbs serves when asked, or in
// auto mode when an RDMA device is up (same port number: rdmacm has its own
// port space).
// With --tls only TCP serves: verbs would hand the same table out in clear.
Result<Servers> start_servers(event_base* base, const ServerConfig& config,
                              const AccessPolicy& access, TableDemand* demand) {
  Servers servers;
  Endpoint at{config.listen_host, config.port};
  if (config.transport != TransportChoice::kVerbs) {
    TcpServerLimits tcp_limits;
    tcp_limits.access = access;
    tcp_limits.demand = demand;
    if (config.tls.enabled) {
      RRS_ASSIGN_OR_RETURN(TlsContext tls,
                           TlsContext::make(config.tls, TlsRole::kServer, TlsWire::kTransport));
      tcp_limits.tls = std::make_shared<const TlsContext>(std::move(tls));
      log::info(std::string("TCP clients connect with TLS 1.3") +
                (config.tls.ca_file.empty()
                     ? ""
                     : ", each with a certificate " + config.tls.ca_file + " signed"));
    } else if (!is_loopback_host(config.listen_host)) {
      log::warn("--listen " + config.listen_host +
                " without --tls: the keyspace crosses the "
                "network in clear text over TCP (docs/tls.md)");
    }
    auto tcp = TcpTableServer::listen(base, at, tcp_limits);
    if (!tcp.ok()) return tcp.status();
    at.port = (*tcp)->port();  // --port 0: verbs takes the port TCP was given
    servers.emplace_back("tcp", std::move(*tcp));
  }
  if (config.tls.enabled) {
    log::info("--tls: serving over TCP only (RDMA is not encrypted)");
    return servers;
  }
  auto device = rdma_device_active();
  if (config.transport == TransportChoice::kVerbs ||
      (config.transport == TransportChoice::kAuto && device.ok())) {
    VerbsServerLimits limits;
    limits.retire_grace = config.retire_grace;
    limits.access = access;
    limits.demand = demand;
    limits.test_no_memory_windows = test_hooks::no_memory_windows();
    limits.test_registration_delay = test_hooks::pd_registration_delay();
    if (auto step = test_hooks::grow_step()) limits.grow_step = *step;
    auto verbs = VerbsTableServer::listen(base, at, limits);
    if (verbs.ok()) {
      servers.emplace_back("verbs", std::move(*verbs));
    } else if (config.transport == TransportChoice::kVerbs) {
      return verbs.status();
    } else {
      log::warn(verbs.status().message() + "; serving over TCP only");
    }
  } else if (config.transport == TransportChoice::kAuto) {
    log::info("verbs: " + device.status().reason() + "; serving over TCP only");
  }
  return servers;
}

// SIGUSR1 asks for a new snapshot now.
void on_snapshot_signal(evutil_socket_t, short, void* keeper) {
  static_cast<EpochKeeper*>(keeper)->snapshot_now();
}

void on_signal(evutil_socket_t sig, short, void* base) {
  log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
  server_readiness().not_ready("stopping");
  event_base_loopexit(static_cast<event_base*>(base), nullptr);
}

// The port clients reach us on, from "ADDR:PORT" (our own listener's
// address), for REPLCONF listening-port; 0 if it does not parse.
uint16_t port_of(const std::string& address) {
  const std::string_view port = std::string_view(address).substr(address.rfind(':') + 1);
  uint16_t n = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  return ec == std::errc() && end == port.data() + port.size() ? n : 0;
}

// Who may read the table: the shared secret (or loopback only without one).
Result<AccessPolicy> access_policy(const ServerConfig& config) {
  AccessPolicy access;
  RRS_ASSIGN_OR_RETURN(access.secret, auth::load_secret(config.auth_file));
  access.max_clients = config.max_clients;
  access.idle_timeout = config.idle_timeout;
  if (!access.secret && !is_loopback_host(config.listen_host))
    return Status::error("--listen " + config.listen_host,
                         "without a shared secret rdma-server serves loopback only, because "
                         "whoever reads the table reads every key; give --auth-file FILE (or "
                         "set " +
                             std::string(auth::kSecretEnv) +
                             ") here and to rdma-client, or --listen 127.0.0.1")
        .as(ErrorKind::kUsage);
  log::info(access.secret ? "clients must prove the shared secret (HMAC-SHA256) before they "
                            "learn any rkey"
                          : "no shared secret: serving loopback only");
  return access;
}

struct Source {
  std::unique_ptr<SnapshotSource> source;
  PsyncSource* psync = nullptr;  // the same object, when it is a PSYNC source
};

Source make_source(const ServerConfig& config, const RedisCredentials& creds,
                   uint16_t announce_port) {
  Source out;
  if (config.source == "rdb") {
    out.source = std::make_unique<RdbFileSource>(config.rdb_file);
    log::info("serving the RDB file " + config.rdb_file + " (no master is contacted)");
    return out;
  }
  if (config.source == "scan") {
    out.source = std::make_unique<ScanSource>(config.redis, creds, ScanOptions{config.scan_count});
    log::info("snapshotting " + config.redis.to_string() + " (SCAN + DUMP)");
    return out;
  }
  PsyncOptions opts;
  opts.link.announce_port = announce_port;
  opts.log_capacity = config.log_size;
  opts.snapshot_every = config.snapshot_every;
  opts.corrupt_log_for_test = test_hooks::corrupt_log();
  opts.new_history_value_limit_for_test = test_hooks::new_history_value_limit();
  auto psync = std::make_unique<PsyncSource>(config.redis, creds, opts);
  out.psync = psync.get();
  out.source = std::move(psync);
  log::info("snapshotting " + config.redis.to_string() + " (PSYNC: the master's own RDB)");
  return out;
}

// --metrics: every name registered, then served from a thread of its own.
Result<std::unique_ptr<metrics::HttpEndpoint>> start_metrics(const ServerConfig& config) {
  if (!config.metrics) return std::unique_ptr<metrics::HttpEndpoint>();
  server_metrics().encrypted(config.tls.enabled, config.redis_tls.enabled);
  return metrics::HttpEndpoint::start(*config.metrics, metrics::global());
}

// Serves until SIGINT or SIGTERM (until then their default action still
// stops a long first snapshot at once).
void run_loop(event_base* base) {
  event* sigint = evsignal_new(base, SIGINT, on_signal, base);
  event* sigterm = evsignal_new(base, SIGTERM, on_signal, base);
  event_add(sigint, nullptr);
  event_add(sigterm, nullptr);
  event_base_dispatch(base);
  event_free(sigint);
  event_free(sigterm);
}

Status serve(const ServerConfig& config) {
  RRS_RETURN_IF_ERROR(pin_to_cpus(config.cpus));  // before any thread: they inherit it
  log::info(set_huge_pages(config.huge_pages));
  RRS_ASSIGN_OR_RETURN(auto metrics, start_metrics(config));
  std::unique_ptr<event_base, void (*)(event_base*)> base(event_base_new(), event_base_free);
  // SIGUSR1's default action ends the process, so its handler goes in before
  // anything that can take time. One that comes during a first snapshot
  // taken at start is handled once the loop runs, after it is published.
  EpochKeeper keeper(base.get(), KeeperOptions{config.snapshot_delay, config.table_retain});
  std::unique_ptr<event, void (*)(event*)> sigusr1(
      evsignal_new(base.get(), SIGUSR1, on_snapshot_signal, &keeper), event_free);
  event_add(sigusr1.get(), nullptr);
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds,
                       load_credentials(config.redis_auth_file, kServerAuthEnv, config.redis_tls));
  RRS_ASSIGN_OR_RETURN(AccessPolicy access, access_policy(config));
  // Listen first, so a taken port or a missing RDMA device is reported before
  // a long snapshot. The loop does not run until the first table is
  // published (when it is taken at start): clients that connect early simply
  // wait in the backlog (within their --connect-timeout), and never see a
  // half-built table.
  RRS_ASSIGN_OR_RETURN(Servers servers, start_servers(base.get(), config, access, &keeper));
  const Source src = make_source(config, creds, port_of(servers.front().second->address()));
  // Only PSYNC forks the master: its first snapshot waits for a client
  // unless --snapshot-at-start. The scan and rdb sources build at once.
  if (src.psync && !config.snapshot_at_start) {
    // A master not up yet (a pod's containers start together) is waited
    // for, not ready meanwhile; one that refuses us will not change its mind.
    const Status master = src.psync->check_master().wrap("check the master before serving");
    if (master.kind() != ErrorKind::kUnavailable) RRS_RETURN_IF_ERROR(master);
    if (!master.ok()) {
      log::warn(master.message() + "; serving anyway, not ready (/readyz) until it answers");
      server_readiness().master_link(false, master.message());
    }
    RRS_RETURN_IF_ERROR(keeper.serve_on_demand(servers));
  } else {
    server_readiness().not_ready("taking the first snapshot");
    RRS_RETURN_IF_ERROR(keeper.publish_first(*src.source, servers));
  }
  if (src.psync) RRS_RETURN_IF_ERROR(keeper.follow(*src.psync));
  run_loop(base.get());
  keeper.stop();
  servers.clear();
  // One more turn lets libevent finish freeing the connections it deferred.
  event_base_loop(base.get(), EVLOOP_NONBLOCK);
  return keeper.failure();
}

}  // namespace

// An exception escaping main (std::bad_alloc; the code reports errors with
// Status) ends the process through std::terminate, with its message: right.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  log::set_program("rdma-server");
  auto config = parse_server_args(argc, argv);
  if (!config.ok()) {
    log::error(config.status().message() + " (see rdma-server --help)");
    return exit_code::kUsage;
  }
  log::set_format(config->log_format);
  if (config->help != HelpKind::kNone) {
    std::fputs(server_help(config->help).c_str(), stdout);
    return exit_code::kOk;
  }
  if (config->version) {
    std::fputs(version_text("rdma-server", rdma_availability()).c_str(), stdout);
    return exit_code::kOk;
  }
  std::signal(SIGPIPE, SIG_IGN);
  const Status s = serve(*config);
  if (!s.ok()) log::error(s.message());
  log::flush_limited();
  return exit_code::for_status(s);
}
