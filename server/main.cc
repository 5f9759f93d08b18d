// rdma-server: snapshot the master, publish the table, serve replicas.
#include <event2/event.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "common/auth/auth.h"
#include "common/base/clock.h"
#include "common/cli/exit_codes.h"
#include "common/base/log.h"
#include "common/transport/verbs/device.h"
#include "common/transport/tcp/table_server.h"
#include "common/transport/verbs/table_server.h"
#include "server/loop_mailbox.h"
#include "server/psync_source.h"
#include "server/scan_source.h"
#include "server/server_config.h"

using namespace rrs;

namespace {

int fail(const Status& s) {
  log::error(s.message());
  return exit_code::for_status(s);
}

// A new epoch number: the creation time in ms, so a restarted sidecar never
// reuses an epoch a client may still hold.
uint64_t next_epoch() { return static_cast<uint64_t>(unix_ms()); }

using Servers = std::vector<std::pair<std::string, std::unique_ptr<TableServer>>>;

// Tests only: $RRS_TEST_NO_MEMORY_WINDOWS=1 makes the verbs server act as if
// its device had no type-2 memory windows, so the fallback (a protection
// domain per client) can be tested on rxe, which has them. Loud, and never
// set in production: windows are the cheaper protection where they exist.
bool no_memory_windows_for_test() {
  const char* v = std::getenv("RRS_TEST_NO_MEMORY_WINDOWS");
  if (v == nullptr || std::string_view(v) != "1") return false;
  log::warn("RRS_TEST_NO_MEMORY_WINDOWS: acting as if the RDMA device had no type-2 memory "
            "windows (a test hook; unset it)");
  return true;
}

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
  std::string why;
  if (config.transport == TransportChoice::kVerbs ||
      (config.transport == TransportChoice::kAuto && rdma_device_active(why))) {
    VerbsServerLimits limits;
    limits.retire_grace = config.retire_grace;
    limits.access = access;
    limits.test_no_memory_windows = no_memory_windows_for_test();
    auto verbs = VerbsTableServer::listen(base, at, limits);
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

// Tests only: $RRS_TEST_CORRUPT_SLOT=N flips one payload byte of slot N
// after its CRC was taken, as a bad DIMM or a stray DMA would, so tests can
// show the client catches it end to end. Loud, and never set in production.
void corrupt_for_test(Table& t) {
  const char* v = std::getenv("RRS_TEST_CORRUPT_SLOT");
  if (v == nullptr) return;
  const uint64_t slot = std::strtoull(v, nullptr, 10);
  if (slot >= t.header.slot_count) return;
  t.bytes.data()[t.header.slot_offset(slot) + table::kSlotHeaderSize] ^= std::byte{0x40};
  log::warn("RRS_TEST_CORRUPT_SLOT: flipped a byte of slot " + std::to_string(slot) +
            " (a test hook; unset it)");
}

// Tests only: $RRS_TEST_CORRUPT_LOG=N flips the stream byte N bytes into
// every new change log once it is sealed; PsyncSource warns for each log.
std::optional<uint64_t> corrupt_log_for_test() {
  const char* v = std::getenv("RRS_TEST_CORRUPT_LOG");
  if (v == nullptr) return std::nullopt;
  return std::strtoull(v, nullptr, 10);
}

void on_snapshot_signal(evutil_socket_t, short, void* psync) {
  if (psync) static_cast<PsyncSource*>(psync)->request_snapshot();
  else log::warn("SIGUSR1 asks for a new snapshot; only --source psync takes them");
}

void on_signal(evutil_socket_t sig, short, void* base) {
  log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", stopping");
  event_base_loopexit(static_cast<event_base*>(base), nullptr);
}

// The port clients reach us on, from "ADDR:PORT", for REPLCONF listening-port.
uint16_t port_of(const std::string& address) {
  return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
}

Status publish_everywhere(Servers& servers, const TablePtr& table) {
  for (auto& [name, server] : servers)
    if (Status s = server->publish(table); !s.ok()) return s.wrap("publish over " + name);
  return {};
}

void print_table_line(const char* what, const table::Header& h, const SnapshotStats& stats,
                      double build_s) {
  std::printf("%s epoch=%llu records=%llu bytes=%llu slot_size=%u functions=%llu build_s=%.3f "
              "source=%s offset=%llu replid=%s",
              what, static_cast<unsigned long long>(h.epoch),
              static_cast<unsigned long long>(h.record_count),
              static_cast<unsigned long long>(h.total_size), h.slot_size,
              static_cast<unsigned long long>(stats.functions), build_s,
              h.source_kind == table::SourceKind::kPsync ? "psync" : "scan",
              static_cast<unsigned long long>(h.source_offset),
              h.source_replid.empty() ? "-" : h.source_replid.c_str());
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
  if (config->help) {
    std::fputs(server_usage(), stdout);
    return exit_code::kOk;
  }
  std::signal(SIGPIPE, SIG_IGN);

  auto creds = load_credentials(config->redis_auth_file, kServerAuthEnv);
  if (!creds.ok()) return fail(creds.status());
  AccessPolicy access;
  auto secret = auth::load_secret(config->auth_file);
  if (!secret.ok()) {
    log::error(secret.status().message());
    return exit_code::kUsage;
  }
  access.secret = *secret;
  access.max_clients = config->max_clients;
  access.idle_timeout = config->idle_timeout;
  if (!access.secret && !is_loopback_host(config->listen_host)) {
    log::error("--listen " + config->listen_host +
               ": without a shared secret rdma-server serves loopback only, because whoever "
               "reads the table reads every key; give --auth-file FILE (or set " +
               auth::kSecretEnv + ") here and to rdma-client, or --listen 127.0.0.1");
    return exit_code::kUsage;
  }
  log::info(access.secret ? "clients must prove the shared secret (HMAC-SHA256) before they "
                            "learn any rkey"
                          : "no shared secret: serving loopback only");

  // Listen first, so a taken port or a missing RDMA device is reported before
  // a long snapshot. The loop does not run until the table is published:
  // clients that connect early simply wait in the backlog (within their
  // --connect-timeout), and never see a half-built table.
  std::unique_ptr<event_base, void (*)(event_base*)> base(event_base_new(), event_base_free);
  auto servers = start_servers(base.get(), *config, access);
  if (!servers.ok()) return fail(servers.status());

  auto t0 = Clock::now();
  std::unique_ptr<SnapshotSource> source;
  PsyncSource* psync = nullptr;
  if (config->source == "scan") {
    source = std::make_unique<ScanSource>(config->redis, *creds, ScanOptions{config->scan_count});
    log::info("snapshotting " + config->redis.to_string() + " (SCAN + DUMP)");
  } else {
    PsyncOptions opts;
    opts.link.announce_port = port_of(servers->front().second->address());
    opts.log_capacity = config->log_size;
    opts.snapshot_every = config->snapshot_every;
    opts.corrupt_log_for_test = corrupt_log_for_test();
    source = std::make_unique<PsyncSource>(config->redis, *creds, opts);
    psync = static_cast<PsyncSource*>(source.get());
    log::info("snapshotting " + config->redis.to_string() + " (PSYNC: the master's own RDB)");
  }
  TableBuilder builder;
  auto stats = source->snapshot(builder);
  if (!stats.ok()) return fail(stats.status());
  auto table = builder.build(next_epoch());
  if (!table.ok()) return fail(table.status());
  corrupt_for_test(**table);
  if (psync) (*table)->log = psync->log();
  double build_s = seconds_since(t0);
  if (Status s = publish_everywhere(*servers, *table); !s.ok()) return fail(s);

  std::string names;
  for (auto& [name, server] : *servers) names += (names.empty() ? "" : "+") + name;
  const table::SlotSizeChoice& c = builder.slot_choice();
  if (stats->vanished || stats->failed)
    log::warn(std::to_string(stats->vanished) + " keys vanished during the snapshot, " +
              std::to_string(stats->failed) + " could not be dumped");
  print_table_line("ready", (*table)->header, *stats, build_s);
  std::printf(" heap_records=%llu log_bytes=%llu listening=%s transport=%s\n",
              static_cast<unsigned long long>(c.heap_records),
              static_cast<unsigned long long>((*table)->log ? (*table)->log->capacity() : 0),
              servers->front().second->address().c_str(), names.c_str());
  std::fflush(stdout);

  // PSYNC: keep the replication link on its own thread, appending the stream
  // to the change log. A full resync there builds the next epoch with a new
  // log, which the loop publishes; then the old log is marked superseded, so
  // its followers resync from the new epoch (the old one retires).
  TablePtr current = *table;  // loop thread
  std::atomic<bool> stop{false};
  std::thread follower;
  std::unique_ptr<LoopMailbox> mailbox;
  if (psync) {
    auto box = LoopMailbox::create(base.get());
    if (!box.ok()) return fail(box.status());
    mailbox = std::move(*box);
    follower = std::thread([&] {
      psync->follow(stop, [&](TableBuilder& next, const SnapshotStats& next_stats,
                              const ChangeLogPtr& log) {
        auto t1 = Clock::now();
        auto built = next.build(next_epoch());
        if (!built.ok()) return log::error("build the new table: " + built.status().message());
        corrupt_for_test(**built);
        (*built)->log = log;
        double next_build_s = seconds_since(t1);
        mailbox->post([&servers, &current, table = TablePtr(*built), next_stats, next_build_s] {
          if (Status s = publish_everywhere(*servers, table); !s.ok()) return log::error(s.message());
          if (current->log && current->log != table->log) current->log->mark_superseded();
          current = table;
          print_table_line("published", table->header, next_stats, next_build_s);
          std::printf("\n");
          std::fflush(stdout);
        });
      });
    });
  }

  event* sigint = evsignal_new(base.get(), SIGINT, on_signal, base.get());
  event* sigterm = evsignal_new(base.get(), SIGTERM, on_signal, base.get());
  event* sigusr1 = evsignal_new(base.get(), SIGUSR1, on_snapshot_signal, psync);
  event_add(sigint, nullptr);
  event_add(sigterm, nullptr);
  event_add(sigusr1, nullptr);
  event_base_dispatch(base.get());
  event_free(sigint);
  event_free(sigterm);
  event_free(sigusr1);
  stop = true;
  if (follower.joinable()) follower.join();
  mailbox.reset();
  servers->clear();
  // One more turn lets libevent finish freeing the connections it deferred.
  event_base_loop(base.get(), EVLOOP_NONBLOCK);
  return exit_code::kOk;
}
