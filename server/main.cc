// rdma-server: snapshot the master, publish the table, serve replicas.
#include <event2/event.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/log.h"
#include "common/rdma_device.h"
#include "common/tcp_table_server.h"
#include "common/verbs_table_server.h"
#include "server/scan_source.h"
#include "server/server_config.h"

using namespace rrs;

namespace {

int fail(const Status& s) {
  log::error(s.message());
  return s.kind() == ErrorKind::kUnavailable ? exit_code::kUnavailable : 1;
}

// A new epoch number: the creation time in ms, so a restarted sidecar never
// reuses an epoch a client may still hold.
uint64_t next_epoch() { return static_cast<uint64_t>(unix_ms()); }

using Servers = std::vector<std::pair<std::string, std::unique_ptr<TableServer>>>;

// TCP always serves unless --transport verbs; verbs serves when asked, or in
// auto mode when an RDMA device is up (same port number: rdmacm has its own
// port space).
Result<Servers> start_servers(event_base* base, const ServerConfig& config) {
  Servers servers;
  Endpoint at{config.listen_host, config.port};
  if (config.transport != TransportChoice::kVerbs) {
    auto tcp = TcpTableServer::listen(base, at);
    if (!tcp.ok()) return tcp.status();
    at.port = (*tcp)->port();  // --port 0: verbs takes the port TCP was given
    servers.emplace_back("tcp", std::move(*tcp));
  }
  std::string why;
  if (config.transport == TransportChoice::kVerbs ||
      (config.transport == TransportChoice::kAuto && rdma_device_active(why))) {
    auto verbs = VerbsTableServer::listen(base, at);
    if (verbs.ok()) {
      servers.emplace_back("verbs", std::move(*verbs));
    } else if (config.transport == TransportChoice::kVerbs) {
      return verbs.status();
    } else {
      log::warn(verbs.status().message() + "; serving over TCP only");
    }
  } else if (config.transport == TransportChoice::kAuto) {
    log::info("verbs: " + why + "; serving over TCP only");
  }
  return servers;
}

void on_signal(evutil_socket_t sig, short, void* base) {
  log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
  event_base_loopexit(static_cast<event_base*>(base), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  log::set_program("rdma-server");
  auto config = parse_server_args(argc, argv);
  if (!config.ok()) {
    log::error(config.status().message() + " (see rdma-server --help)");
    return exit_code::kUsage;
  }
  if (config->help) {
    std::fputs(server_usage(), stdout);
    return exit_code::kOk;
  }
  std::signal(SIGPIPE, SIG_IGN);

  auto creds = load_credentials(config->redis_auth_file, kServerAuthEnv);
  if (!creds.ok()) return fail(creds.status());

  // Listen first, so a taken port or a missing RDMA device is reported before
  // a long snapshot. The loop does not run until the table is published:
  // clients that connect early simply wait in the backlog (within their
  // --connect-timeout), and never see a half-built table.
  std::unique_ptr<event_base, void (*)(event_base*)> base(event_base_new(), event_base_free);
  auto servers = start_servers(base.get(), *config);
  if (!servers.ok()) return fail(servers.status());

  auto t0 = Clock::now();
  ScanSource source(config->redis, *creds, {config->scan_count});
  TableBuilder builder;
  log::info("snapshotting " + config->redis.to_string() + " (SCAN + DUMP)");
  auto stats = source.snapshot(builder);
  if (!stats.ok()) return fail(stats.status());
  auto table = builder.build(next_epoch());
  if (!table.ok()) return fail(table.status());
  double build_s = seconds_since(t0);

  std::string names;
  for (auto& [name, server] : *servers) {
    if (Status s = server->publish(*table); !s.ok()) return fail(s.wrap("publish over " + name));
    names += (names.empty() ? "" : "+") + name;
  }

  const table::Header& h = (*table)->header;
  const table::SlotSizeChoice& c = builder.slot_choice();
  if (stats->vanished || stats->failed)
    log::warn(std::to_string(stats->vanished) + " keys vanished during the snapshot, " +
              std::to_string(stats->failed) + " could not be dumped");
  std::printf(
      "ready epoch=%llu records=%llu bytes=%llu slot_size=%u heap_records=%llu build_s=%.3f "
      "listening=%s transport=%s\n",
      static_cast<unsigned long long>(h.epoch), static_cast<unsigned long long>(h.record_count),
      static_cast<unsigned long long>(h.total_size), h.slot_size,
      static_cast<unsigned long long>(c.heap_records), build_s,
      servers->front().second->address().c_str(), names.c_str());
  std::fflush(stdout);
  if (config->listen_host == "0.0.0.0" || config->listen_host == "::")
    log::warn("serving on all interfaces without authentication: anyone who can connect can "
              "read every key");

  event* sigint = evsignal_new(base.get(), SIGINT, on_signal, base.get());
  event* sigterm = evsignal_new(base.get(), SIGTERM, on_signal, base.get());
  event_add(sigint, nullptr);
  event_add(sigterm, nullptr);
  event_base_dispatch(base.get());
  event_free(sigint);
  event_free(sigterm);
  servers->clear();
  // One more turn lets libevent finish freeing the connections it deferred.
  event_base_loop(base.get(), EVLOOP_NONBLOCK);
  return exit_code::kOk;
}
