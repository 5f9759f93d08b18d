// rdma-client <server-ip> <server-port>: full sync of a replica from the
// sidecar (RESTORE, or --mode replica: an RDB down a replica link), and with
// --follow or --handoff, the master's stream after it. Every mode returns a
// Status; only this file turns it into an exit code.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "client/client_config.h"
#include "client/client_flags.h"
#include "client/client_metrics.h"
#include "client/cluster/cluster_follow.h"
#include "client/cluster/cluster_sync.h"
#include "client/follow/follow.h"
#include "client/follow/follower.h"
#include "client/replica/replica_sink.h"
#include "client/restore/restore_sink.h"
#include "client/sync/counting_sink.h"
#include "client/sync/sync_driver.h"
#include "client/verify/verify_run.h"
#include "common/auth/auth.h"
#include "common/base/log.h"
#include "common/cli/cpu_list.h"
#include "common/cli/exit_codes.h"
#include "common/cli/version.h"
#include "common/metrics/http_endpoint.h"
#include "common/metrics/readiness.h"
#include "common/table/huge_pages.h"
#include "common/tls/tls_context.h"
#include "common/transport/verbs/device.h"

using namespace rrs;

namespace {

// One full sync in the configured load path, and the target left as it says.
Status sync_once(const ClientConfig& config) {
  if (config.cluster) return run_cluster_sync(config);
  if (config.no_load) {
    CountingSink sink;
    return run_sync(config, sink).status();
  }
  if (config.mode == IngestMode::kReplica) {
    ReplicaSink sink(config);
    RRS_RETURN_IF_ERROR(run_sync(config, sink).status());
    sink.leave_target();
    return {};
  }
  RestoreSink sink(config);
  return run_sync(config, sink).status();
}

// What a finished run did, for --linger's /readyz.
std::string what_was_done(const ClientConfig& config) {
  if (config.verify) return "the target was verified equal to " + config.source_redis.to_string();
  if (config.handoff) return "the target is a replica of " + config.master.to_string();
  return "the target is loaded";
}

// --linger: the probes keep answering, ready, until a stop signal, so that a
// container runtime that restarts what exits does not sync again.
void linger_until_stopped(const ClientConfig& config) {
  metrics::set_readiness(true, what_was_done(config));
  catch_stop_signals(true);
  if (!stop_requested())
    log::info("done; --linger: answering /healthz and /readyz until SIGTERM or SIGINT");
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

// --metrics: every name registered, then served from a thread of its own
// while the client runs.
Result<std::unique_ptr<metrics::HttpEndpoint>> start_metrics(const ClientConfig& config) {
  if (!config.metrics) return std::unique_ptr<metrics::HttpEndpoint>();
  client_metrics().encrypted(config.tls.enabled, config.redis_tls.enabled);
  return metrics::HttpEndpoint::start(*config.metrics, metrics::global());
}

}  // namespace

// An exception escaping main (std::bad_alloc; the code reports errors with
// Status) ends the process through std::terminate, with its message: right.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  log::set_program("rdma-client");
  auto config = parse_client_args(argc, argv);
  if (!config.ok()) {
    log::error(config.status().message() + " (see rdma-client --help)");
    return exit_code::kUsage;
  }
  log::set_format(config->log_format);
  if (config->help != HelpKind::kNone) {
    std::fputs(client_help(config->help).c_str(), stdout);
    return exit_code::kOk;
  }
  if (config->version) {
    std::fputs(version_text("rdma-client", rdma_availability()).c_str(), stdout);
    return exit_code::kOk;
  }
  std::signal(SIGPIPE, SIG_IGN);
  if (Status s = pin_to_cpus(config->cpus); !s.ok()) {  // before any thread: they inherit it
    log::error(s.message());
    return exit_code::for_status(s);
  }
  // Said only when auto turned them off: the rare case worth knowing.
  const std::string pages = set_huge_pages(config->huge_pages);
  if (!huge_pages_on() && !config->quiet) log::info(pages);
  auto secret = auth::load_secret(config->auth_file);
  if (!secret.ok()) {
    log::error(secret.status().message());
    return exit_code::kUsage;
  }
  config->secret = *secret;
  if (config->tls.enabled) {
    auto tls = TlsContext::make(config->tls, TlsRole::kClient, TlsWire::kTransport);
    if (!tls.ok()) {
      log::error(tls.status().message());
      return exit_code::for_status(tls.status());
    }
    config->transport_tls = std::make_shared<const TlsContext>(std::move(*tls));
  }
  auto metrics_endpoint = start_metrics(*config);
  if (!metrics_endpoint.ok()) {
    log::error(metrics_endpoint.status().message());
    return exit_code::for_status(metrics_endpoint.status());
  }
  if (config->atomic && config->mode == IngestMode::kReplica)
    log::info("--atomic: nothing to add in replica mode: the target loads the table as a full "
              "sync, which keeps its old data until the new copy is complete (a transfer that "
              "fails leaves it as it was)");
  metrics::set_readiness(false, config->verify ? "comparing the target with its source"
                                               : "loading the table");
  Status s;
  if (config->verify)
    s = run_verify(*config);
  else if (config->cluster && config->follow)
    s = run_cluster_follow(*config);
  else
    s = config->follow || config->handoff ? run_follow(*config) : sync_once(*config);
  if (!s.ok()) log::error(s.message());
  if (s.ok() && config->linger) linger_until_stopped(*config);
  log::flush_limited();
  return exit_code::for_status(s);
}
