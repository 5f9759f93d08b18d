// rdma-server: snapshot the master, publish the table, serve replicas.
// Every step returns a Status; only main() turns it into an exit code.
#include <event2/event.h>

#include <atomic>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "common/auth/auth.h"
#include "common/base/clock.h"
#include "common/base/log.h"
#include "common/cli/cpu_list.h"
#include "common/cli/exit_codes.h"
#include "common/cli/version.h"
#include "common/metrics/http_endpoint.h"
#include "common/net/loop_mailbox.h"
#include "common/table/huge_pages.h"
#include "common/transport/tcp/table_server.h"
#include "common/transport/verbs/device.h"
#include "common/transport/verbs/table_server.h"
#include "proto/rdb_convert.h"
#include "server/cluster_shard.h"
#include "server/psync_source.h"
#include "server/rdb_file_source.h"
#include "server/scan_source.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/test_hooks.h"

using namespace rrs;

namespace {

// A new epoch number: the creation time in ms, so a restarted sidecar never
// reuses an epoch a client may still hold.
uint64_t next_epoch() { return static_cast<uint64_t>(unix_ms()); }

using Servers = std::vector<std::pair<std::string, std::unique_ptr<TableServer>>>;

// TCP always serves unless --transport verbs; verbs serves when asked, or in
// auto mode when an RDMA device is up (same port number: rdmacm has its own
// port space).
Result<Servers> start_servers(event_base* base, const ServerConfig& config,
                              const AccessPolicy& access) {
  Servers servers;
  Endpoint at{config.listen_host, config.port};
  if (config.transport != TransportChoice::kVerbs) {
    TcpServerLimits tcp_limits;
    tcp_limits.access = access;
    auto tcp = TcpTableServer::listen(base, at, tcp_limits);
    if (!tcp.ok()) return tcp.status();
    at.port = (*tcp)->port();  // --port 0: verbs takes the port TCP was given
    servers.emplace_back("tcp", std::move(*tcp));
  }
  auto device = rdma_device_active();
  if (config.transport == TransportChoice::kVerbs ||
      (config.transport == TransportChoice::kAuto && device.ok())) {
    VerbsServerLimits limits;
    limits.retire_grace = config.retire_grace;
    limits.access = access;
    limits.test_no_memory_windows = test_hooks::no_memory_windows();
    limits.test_registration_delay = test_hooks::pd_registration_delay();
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

// `arg` points to the PSYNC source (null for the others), which does not
// exist yet when the handler is installed.
void on_snapshot_signal(evutil_socket_t, short, void* arg) {
  if (PsyncSource* psync = *static_cast<PsyncSource**>(arg))
    psync->request_snapshot();
  else
    log::warn("SIGUSR1 asks for a new snapshot; only --source psync takes them");
}

void on_signal(evutil_socket_t sig, short, void* base) {
  log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
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

Status publish_everywhere(Servers& servers, const TablePtr& table) {
  for (auto& [name, server] : servers)
    if (Status s = server->publish(table); !s.ok()) return s.wrap("publish over " + name);
  return {};
}

void print_table_line(const char* what, const table::Header& h, const SnapshotStats& stats,
                      double build_s) {
  std::printf("%s epoch=%llu records=%llu bytes=%llu slot_size=%u functions=%llu build_s=%.3f "
              "source=%s offset=%llu replid=%s engine=%s version=%s rdb=%u module_aux=%u "
              "empty_skipped=%llu keys_lost=%llu",
              what, static_cast<unsigned long long>(h.epoch),
              static_cast<unsigned long long>(h.record_count),
              static_cast<unsigned long long>(h.total_size), h.slot_size,
              static_cast<unsigned long long>(stats.functions), build_s,
              table::source_name(h.source_kind), static_cast<unsigned long long>(h.source_offset),
              h.source_replid.empty() ? "-" : h.source_replid.c_str(),
              h.engine == Engine::kValkey  ? "valkey"
              : h.engine == Engine::kRedis ? "redis"
                                           : "-",
              h.server_version.empty() ? "-" : h.server_version.c_str(), h.rdb_version,
              h.module_aux_count, static_cast<unsigned long long>(h.empty_skipped),
              static_cast<unsigned long long>(h.keys_lost));
  for (size_t i = 0; i < rdb::kLossKindCount; ++i)
    std::printf(" lossy_%s=%llu", rdb::loss_key(i),
                static_cast<unsigned long long>(h.lossy[i].count));
  std::printf(" hash_slots=%s", slots_text(stats.hash_slots).c_str());
  // A replica as source: the table is its master's history (docs/snapshot-sources.md).
  std::printf(" source_role=%s", stats.source_role.name());
  if (stats.source_role.kind == SourceRole::kReplica)
    std::printf(" source_master=%s", stats.source_role.master.c_str());
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

// The first table: snapshot, build, publish everywhere, print the ready line.
Result<TablePtr> publish_first_table(const Source& src, Servers& servers) {
  const auto t0 = Clock::now();
  TableBuilder builder;
  RRS_ASSIGN_OR_RETURN(SnapshotStats stats, src.source->snapshot(builder));
  RRS_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, builder.build(next_epoch()));
  test_hooks::corrupt_slot(*table);
  if (src.psync) table->log = src.psync->log();
  const double build_s = seconds_since(t0);
  RRS_RETURN_IF_ERROR(publish_everywhere(servers, table));
  server_metrics().published(*table, build_s);

  std::string names;
  for (auto& [name, server] : servers) names += (names.empty() ? "" : "+") + name;
  const table::SlotSizeChoice& c = builder.slot_choice();
  if (stats.vanished || stats.failed)
    log::warn(std::to_string(stats.vanished) + " keys vanished during the snapshot, " +
              std::to_string(stats.failed) +
              " could not be dumped (keys_lost: clients refuse the table without "
              "--allow-missing-keys)");
  print_table_line("ready", table->header, stats, build_s);
  std::printf(" heap_records=%llu log_bytes=%llu listening=%s transport=%s\n",
              static_cast<unsigned long long>(c.heap_records),
              static_cast<unsigned long long>(table->log ? table->log->capacity() : 0),
              servers.front().second->address().c_str(), names.c_str());
  std::fflush(stdout);
  return TablePtr(table);
}

// PSYNC: keeps the replication link on its own thread, appending the stream
// to the change log. A full resync there builds the next epoch with a new
// log, which the loop publishes; then the old log is marked superseded, so
// its followers resync from the new epoch (the old one retires).
class EpochFollower {
 public:
  EpochFollower(Servers& servers, TablePtr first) : servers_(servers), current_(std::move(first)) {}
  EpochFollower(const EpochFollower&) = delete;
  EpochFollower& operator=(const EpochFollower&) = delete;
  ~EpochFollower() { stop(); }

  Status start(event_base* base, PsyncSource& psync) {
    base_ = base;
    RRS_ASSIGN_OR_RETURN(mailbox_, LoopMailbox::create(base));
    thread_ = std::thread([this, &psync] {
      Status s = psync.follow(stop_, [this](TableBuilder& next, const SnapshotStats& stats,
                                            const ChangeLogPtr& log) {
        on_new_snapshot(next, stats, log);
      });
      if (!s.ok())
        mailbox_->post(
            [this, s] { fail(s.wrap("the replication link was given up (restart rdma-server)")); });
    });
    return {};
  }
  // Why serving stopped early: the change log can no longer grow.
  const Status& failure() const { return failure_; }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    mailbox_.reset();
  }

 private:
  // On the follow thread: build, then hand the table to the loop thread.
  void on_new_snapshot(TableBuilder& next, const SnapshotStats& stats, const ChangeLogPtr& log) {
    const auto t1 = Clock::now();
    auto built = next.build(next_epoch());
    if (!built.ok()) {
      Status s = built.status().wrap("build the new history's table");
      mailbox_->post([this, s] { fail(s); });
      return;
    }
    test_hooks::corrupt_slot(**built);
    (*built)->log = log;
    const double build_s = seconds_since(t1);
    mailbox_->post([this, table = TablePtr(*built), stats, build_s] {
      Status s = publish_everywhere(servers_, table);
      if (s.ok() && test_hooks::fail_republish())
        s = Status::error("publish on verbs", "RRS_TEST_FAIL_REPUBLISH");
      if (!s.ok()) return fail(s.wrap("publish the new table"));
      if (current_->log && current_->log != table->log) current_->log->mark_superseded();
      current_ = table;
      server_metrics().published(*table, build_s);
      print_table_line("published", table->header, stats, build_s);
      std::printf("\n");
      std::fflush(stdout);
    });
  }

  // Loop thread. The current log will never grow again (the link left its
  // history, or the table that continues it could not be served: a verbs
  // publish may fail after the TCP one, leaving the transports apart). Exit
  // (4) rather than mark the log dead and stay up: a process that serves a
  // table of a history its link has left helps nobody, and a supervisor's
  // restart takes a fresh snapshot. The log is marked superseded first, so
  // followers that read it before the exit resync rather than idle.
  void fail(const Status& why) {
    if (!failure_.ok()) return;
    failure_ = why.as(ErrorKind::kBadData);
    log::error(failure_.message() + "; the change log can no longer grow: exiting");
    if (current_->log) current_->log->mark_superseded();
    event_base_loopbreak(base_);
  }

  Servers& servers_;
  event_base* base_ = nullptr;
  Status failure_;    // loop thread
  TablePtr current_;  // loop thread
  std::atomic<bool> stop_{false};
  std::unique_ptr<LoopMailbox> mailbox_;
  std::thread thread_;
};

// --metrics: every name registered, then served from a thread of its own.
Result<std::unique_ptr<metrics::HttpEndpoint>> start_metrics(const std::optional<Endpoint>& at) {
  if (!at) return std::unique_ptr<metrics::HttpEndpoint>();
  server_metrics();
  return metrics::HttpEndpoint::start(*at, metrics::global());
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
  RRS_ASSIGN_OR_RETURN(auto metrics, start_metrics(config.metrics));
  std::unique_ptr<event_base, void (*)(event_base*)> base(event_base_new(), event_base_free);
  // SIGUSR1's default action ends the process, so its handler goes in before
  // anything that can take time. One that comes during the first snapshot is
  // handled once the loop runs, after the first table is published.
  PsyncSource* psync = nullptr;
  std::unique_ptr<event, void (*)(event*)> sigusr1(
      evsignal_new(base.get(), SIGUSR1, on_snapshot_signal, &psync), event_free);
  event_add(sigusr1.get(), nullptr);
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds,
                       load_credentials(config.redis_auth_file, kServerAuthEnv));
  RRS_ASSIGN_OR_RETURN(AccessPolicy access, access_policy(config));
  // Listen first, so a taken port or a missing RDMA device is reported before
  // a long snapshot. The loop does not run until the table is published:
  // clients that connect early simply wait in the backlog (within their
  // --connect-timeout), and never see a half-built table.
  RRS_ASSIGN_OR_RETURN(Servers servers, start_servers(base.get(), config, access));
  const Source src = make_source(config, creds, port_of(servers.front().second->address()));
  psync = src.psync;
  RRS_ASSIGN_OR_RETURN(TablePtr table, publish_first_table(src, servers));

  EpochFollower follower(servers, table);
  if (src.psync) RRS_RETURN_IF_ERROR(follower.start(base.get(), *src.psync));
  run_loop(base.get());
  follower.stop();
  servers.clear();
  // One more turn lets libevent finish freeing the connections it deferred.
  event_base_loop(base.get(), EVLOOP_NONBLOCK);
  return follower.failure();
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
  if (config->help) {
    std::fputs(server_usage(), stdout);
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
