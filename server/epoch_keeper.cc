#include "server/epoch_keeper.h"

#include <cstdio>

#include "common/base/log.h"
#include "proto/rdb_convert.h"
#include "server/cluster_shard.h"
#include "server/server_metrics.h"
#include "server/server_readiness.h"
#include "server/test_hooks.h"

namespace rrs {

namespace {

// A new epoch number: the creation time in ms, so a restarted sidecar never
// reuses an epoch a client may still hold.
uint64_t next_epoch() { return static_cast<uint64_t>(unix_ms()); }

Status publish_everywhere(Servers& servers, const TablePtr& table) {
  for (auto& [name, server] : servers)
    if (Status s = server->publish(table); !s.ok()) return s.wrap("publish over " + name);
  return {};
}

// "listening=ADDR transport=tcp+verbs tls=off", the end of the ready line.
std::string serving_fields(const Servers& servers) {
  std::string names;
  bool tls = false;
  for (const auto& [name, server] : servers) {
    names += (names.empty() ? "" : "+") + name;
    tls = tls || server->encrypted();
  }
  return "listening=" + servers.front().second->address() + " transport=" + names +
         " tls=" + (tls ? "on" : "off");
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

}  // namespace

Status EpochKeeper::publish_first(SnapshotSource& source, Servers& servers) {
  servers_ = &servers;
  const auto t0 = Clock::now();
  TableBuilder builder;
  RRS_ASSIGN_OR_RETURN(SnapshotStats stats, source.snapshot(builder));
  RRS_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, builder.build(next_epoch()));
  test_hooks::corrupt_slot(*table);
  if (auto* psync = dynamic_cast<PsyncSource*>(&source)) table->log = psync->log();
  const double build_s = seconds_since(t0);
  RRS_RETURN_IF_ERROR(publish_everywhere(servers, table));
  current_ = table;
  server_metrics().published(*table, build_s);

  const table::SlotSizeChoice& c = builder.slot_choice();
  if (stats.vanished || stats.failed)
    log::warn(std::to_string(stats.vanished) + " keys vanished during the snapshot, " +
              std::to_string(stats.failed) +
              " could not be dumped (keys_lost: clients refuse the table without "
              "--allow-missing-keys)");
  // Ready before the line says so: whoever reads the line may probe at once.
  server_readiness().serving("serving epoch " + std::to_string(table->epoch()), true);
  print_table_line("ready", table->header, stats, build_s);
  std::printf(" heap_records=%llu log_bytes=%llu %s\n",
              static_cast<unsigned long long>(c.heap_records),
              static_cast<unsigned long long>(table->log ? table->log->capacity() : 0),
              serving_fields(servers).c_str());
  std::fflush(stdout);
  return {};
}

Status EpochKeeper::serve_on_demand(Servers& servers) {
  servers_ = &servers;
  // An epoch without a table, so that every transport can take a client's
  // handshake (verbs registers per epoch) and hear what it wants.
  current_ = table_without_bytes(next_epoch(), nullptr);
  RRS_RETURN_IF_ERROR(publish_everywhere(servers, current_));
  server_readiness().serving("no table yet: the first client's request takes one", false);
  std::printf("ready table=none snapshot=on-demand snapshot_delay_ms=%lld %s\n",
              static_cast<long long>(opts_.gather_delay.count()), serving_fields(servers).c_str());
  std::fflush(stdout);
  log::info("no snapshot until a client asks for the table: the master is not forked before");
  return {};
}

Status EpochKeeper::follow(PsyncSource& psync) {
  psync_ = &psync;
  if (opts_.table_retain) {
    retention_timer_.reset(event_new(base_, -1, EV_PERSIST, on_retention_tick, this));
    const timeval every{1, 0};
    evtimer_add(retention_timer_.get(), &every);
  }
  RRS_ASSIGN_OR_RETURN(mailbox_, LoopMailbox::create(base_));
  psync.stream_tables({.opened =
                           [this](const std::shared_ptr<Table>& t) {
                             mailbox_->post([this, t = TablePtr(t)] { serve_streamed(t); });
                           },
                       .broke =
                           [this](const std::shared_ptr<Table>& t) {
                             mailbox_->post([this, t = TablePtr(t)] { withdraw_streamed(t); });
                           }});
  thread_ = std::thread([this, &psync] {
    Status s = psync.follow(stop_,
                            [this](TableBuilder& next, const SnapshotStats& stats,
                                   const ChangeLogPtr& log) { on_new_snapshot(next, stats, log); });
    if (!s.ok())
      mailbox_->post(
          [this, s] { fail(s.wrap("the replication link was given up (restart rdma-server)")); });
  });
  return {};
}

void EpochKeeper::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  mailbox_.reset();
  delay_timer_.reset();
  retention_timer_.reset();
}

void EpochKeeper::snapshot_now() {
  if (!psync_) {
    log::warn("SIGUSR1 asks for a new snapshot; only --source psync takes them");
    return;
  }
  ask("SIGUSR1", std::chrono::milliseconds(0));
}

bool EpochKeeper::fits(const Table& t) {
  return !t.empty() && (!t.log || t.log->start() <= t.header.source_offset);
}

std::optional<Refusal> EpochKeeper::refuse(const TablePtr& table) {
  last_read_ = Clock::now();
  if (table && fits(*table)) return std::nullopt;
  if (!psync_) return std::nullopt;  // the transports answer "not ready" while there is none
  // One is streaming in already (served as it comes over TCP; a transport
  // that takes it only complete waits for it).
  if (streaming_)
    return Refusal{control::ErrorCode::kSnapshotPending,
                   "a snapshot of the master is streaming in (epoch " +
                       std::to_string(streaming_->epoch()) + ")"};
  if (!asked_at_)
    ask(table && !table->empty()
            ? "the change log has moved past epoch " + std::to_string(table->epoch()) +
                  ", so a new client could not follow from it"
            : "a client asked for the table and none is held",
        opts_.gather_delay);
  // A snapshot that keeps failing is no reason for clients to wait on:
  // "not ready" lets them give up at their --connect-timeout, with the cause.
  if (std::string failed = psync_->last_failure(); !failed.empty())
    return Refusal{control::ErrorCode::kNotReady,
                   "the snapshot asked for failed (" + failed + "); rdma-server retries"};
  return Refusal{control::ErrorCode::kSnapshotPending, progress()};
}

void EpochKeeper::ask(const std::string& why, std::chrono::milliseconds delay) {
  if (!asked_at_) asked_at_ = Clock::now();
  if (delay.count() == 0) {
    log::info(why + ": asking the master for a snapshot");
    delay_timer_.reset();
    psync_->request_snapshot();
    return;
  }
  log::info(why + ": a snapshot in " + std::to_string(delay.count()) +
            " ms (--snapshot-delay), for every client that asks meanwhile");
  delay_timer_.reset(evtimer_new(base_, on_delay_over, this));
  const timeval tv{static_cast<time_t>(delay.count() / 1000),
                   static_cast<suseconds_t>(delay.count() % 1000 * 1000)};
  evtimer_add(delay_timer_.get(), &tv);
}

void EpochKeeper::on_delay_over(evutil_socket_t, short, void* self) {
  auto* k = static_cast<EpochKeeper*>(self);
  k->delay_timer_.reset();
  if (k->current_ && fits(*k->current_)) {  // one was published meanwhile (SIGUSR1)
    k->asked_at_.reset();
    return;
  }
  log::info("the gathering delay is over: asking the master for a snapshot");
  k->psync_->request_snapshot();
}

std::string EpochKeeper::progress() const {
  const double since = asked_at_ ? seconds_since(*asked_at_) : 0;
  char text[160];
  if (delay_timer_)
    std::snprintf(text, sizeof text,
                  "a snapshot of the master starts in %.1f s (gathering the replicas that ask)",
                  std::max(0.0, static_cast<double>(opts_.gather_delay.count()) / 1000 - since));
  else
    std::snprintf(text, sizeof text, "a snapshot of the master is under way (%.0f s)", since);
  return text;
}

void EpochKeeper::on_new_snapshot(TableBuilder& next, const SnapshotStats& stats,
                                  const ChangeLogPtr& log) {
  const auto t1 = Clock::now();
  auto built = next.build(next_epoch());
  if (!built.ok()) {
    Status s = built.status().wrap("build the new history's table");
    mailbox_->post([this, s] { fail(s); });
    return;
  }
  test_hooks::corrupt_slot(**built);
  // A streamed table got its log when it opened, and is being read since.
  if (!(*built)->streamed()) (*built)->log = log;
  // As in the ready line: the snapshot (the master's RDB) and the build.
  const double build_s = stats.rdb_seconds + seconds_since(t1);
  mailbox_->post(
      [this, table = TablePtr(*built), stats, build_s] { publish(table, stats, build_s); });
}

void EpochKeeper::serve_streamed(const TablePtr& table) {
  if (table->complete()) return;  // published whole already, or about to be
  bool served = false;
  for (auto& [name, server] : *servers_) {
    if (!server->streams()) continue;
    if (Status s = server->publish(table); !s.ok()) {
      log::warn(s.wrap("serve epoch " + std::to_string(table->epoch()) + " over " + name +
                       " while it is built")
                    .message() +
                "; its clients get it once complete");
      continue;
    }
    served = true;
  }
  if (!served) return;
  streaming_ = table;
  log::info("epoch " + std::to_string(table->epoch()) +
            ": clients read its records while the master's RDB streams in");
}

void EpochKeeper::withdraw_streamed(const TablePtr& table) {
  if (streaming_ != table) return;
  streaming_.reset();
  // Clients reading it see it broken and stop; new ones get what was served
  // before (and wait for the next snapshot if that does not fit them).
  if (!current_) return;
  for (auto& [name, server] : *servers_)
    if (server->streams())
      if (Status s = server->publish(current_); !s.ok())
        log::warn(s.wrap("withdraw the broken epoch over " + name).message());
}

void EpochKeeper::publish(const TablePtr& table, const SnapshotStats& stats, double build_s) {
  streaming_.reset();
  Status s = publish_everywhere(*servers_, table);
  if (s.ok() && test_hooks::fail_republish())
    s = Status::error("publish on verbs", "RRS_TEST_FAIL_REPUBLISH");
  if (!s.ok()) return fail(s.wrap("publish the new table"));
  if (current_ && current_->log && current_->log != table->log) current_->log->mark_superseded();
  current_ = table;
  last_read_ = Clock::now();
  if (asked_at_) {
    log::info("the snapshot asked for " + std::to_string(seconds_since(*asked_at_)).substr(0, 5) +
              " s ago is published: epoch " + std::to_string(table->epoch()));
    asked_at_.reset();
  }
  server_metrics().published(*table, build_s);
  server_readiness().serving("serving epoch " + std::to_string(table->epoch()), true);
  print_table_line("published", table->final_header(), stats, build_s);
  std::printf("\n");
  std::fflush(stdout);
}

void EpochKeeper::on_retention_tick(evutil_socket_t, short, void* self) {
  static_cast<EpochKeeper*>(self)->give_back_if_unread();
}

void EpochKeeper::give_back_if_unread() {
  // Clients told "snapshot pending" come back within a second or two: a
  // table is never given back before they could have arrived.
  constexpr auto kArrivalGrace = std::chrono::seconds(5);
  // Without a change log (--log-size 0) new snapshots of the same history
  // are never taken (nothing could tell a table from a newer one's start):
  // the table is the only one there will be.
  if (!current_ || current_->empty() || !current_->log || streaming_) return;
  size_t readers = 0;
  for (const auto& [name, server] : *servers_) readers += server->table_readers(current_->epoch());
  const auto now = Clock::now();
  if (readers > 0) last_read_ = now;
  if (now - last_read_ < std::max<std::chrono::seconds>(*opts_.table_retain, kArrivalGrace)) return;
  // Followers go on reading the change log, now served without a table.
  TablePtr without = table_without_bytes(next_epoch(), current_->log);
  if (Status s = publish_everywhere(*servers_, without); !s.ok())
    return log::warn(s.wrap("give the unread table back").message() + "; it stays");
  const uint64_t bytes = current_->final_header().total_size;
  const uint64_t epoch = current_->epoch();
  current_ = without;
  server_metrics().released();
  log::info("epoch " + std::to_string(epoch) + " (" + std::to_string(bytes >> 20) +
            " MiB) had no reader for " + std::to_string(opts_.table_retain->count()) +
            " s (--table-retain): its memory is given back; the next client that needs a table "
            "asks for a new snapshot");
  std::printf("released epoch=%llu bytes=%llu\n", static_cast<unsigned long long>(epoch),
              static_cast<unsigned long long>(bytes));
  std::fflush(stdout);
  server_readiness().serving("no table held: the next client's request takes one", false);
}

// Loop thread. The current log will never grow again (the link left its
// history, or the table that continues it could not be served: a verbs
// publish may fail after the TCP one, leaving the transports apart). Exit
// (4) rather than mark the log dead and stay up: a process that serves a
// table of a history its link has left helps nobody, and a supervisor's
// restart takes a fresh snapshot. The log is marked superseded first, so
// followers that read it before the exit resync rather than idle.
void EpochKeeper::fail(const Status& why) {
  if (!failure_.ok()) return;
  failure_ = why.as(ErrorKind::kBadData);
  log::error(failure_.message() + "; the change log can no longer grow: exiting");
  if (current_ && current_->log) current_->log->mark_superseded();
  event_base_loopbreak(base_);
}

}  // namespace rrs
