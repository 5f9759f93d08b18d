#include "client/follow/follower.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "client/client_metrics.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// Idle polling: the header is re-read after a pause that doubles from the
// first to the last value while nothing new arrives. The cap bounds both
// the lag an idle follower adds to the next write and the reads it makes
// (500 small READs a second when idle).
constexpr auto kIdleFirst = std::chrono::microseconds(50);
constexpr auto kIdleMax = std::chrono::microseconds(2000);
// --handoff: the target counts as caught up when the log holds at most this
// much it has not been sent; under a steady stream of writes it may never
// hold nothing. The master's backlog serves the rest.
constexpr uint64_t kHandoffSlack = uint64_t{64} * 1024;
// Between attempts to reach a sidecar that went away, and the longest one.
constexpr auto kReconnectPause = std::chrono::seconds(1);
constexpr auto kAttempt = std::chrono::seconds(5);

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_stop_signal(int) { g_stop.store(true); }

}  // namespace

void catch_stop_signals(bool on) {
  struct sigaction sa {};
  sa.sa_handler = on ? on_stop_signal : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }
void request_stop() { g_stop.store(true); }

Status Follower::reconnect(const Status& cause) {
  log::warn(cause.message() + "; reconnecting to rdma-server " + config_.server.to_string());
  client_metrics().failed(cause);
  client_metrics().reconnects.add();
  while (!g_stop.load()) {
    // Short attempts, so a stop signal is not kept waiting.
    Status s = synced_.reader->connect(
        Clock::now() + std::min<std::chrono::milliseconds>(config_.connect_timeout, kAttempt));
    if (s.ok()) return {};
    log::warn("reconnect: " + s.message() + "; retrying");
    // A log that cannot be read cannot grow either: a sidecar that exited
    // for good (its link given up) must not leave the follower waiting on.
    RRS_RETURN_IF_ERROR(check_growth());
    std::this_thread::sleep_for(kReconnectPause);
  }
  return Status::error("reconnect to rdma-server", "stopping");
}

Result<std::optional<FollowEnd>> Follower::refresh_header() {
  while (true) {
    auto h = tail_.read_header();
    if (h.ok()) {
      header_ = *h;
      return std::optional<FollowEnd>();
    }
    if (h.status().kind() != ErrorKind::kUnavailable) return h.status();
    const uint64_t log_id = synced_.reader->descriptor().log_id;
    if (Status s = reconnect(h.status()); !s.ok()) {
      if (!g_stop.load()) return s;                          // stalled
      return std::optional<FollowEnd>(FollowEnd{true, ""});  // stopped meanwhile
    }
    if (auto other = another_log(log_id)) return other;
    RRS_RETURN_IF_ERROR(tail_.attach());
    log::info("reconnected; the change log is the same, following on from offset " +
              std::to_string(read_pos_));
  }
}

void Follower::report(const char* final) {
  const uint64_t applied = sink_.applied();
  const uint64_t lag_bytes = header_.end > applied ? header_.end - applied : 0;
  const long long lag_ms = unapplied_.empty()
                               ? 0
                               : std::chrono::duration_cast<std::chrono::milliseconds>(
                                     Clock::now() - unapplied_.front().at)
                                     .count();
  publish_metrics(applied, lag_bytes, lag_ms);
  if (config_.status_interval_s == 0 && !final) return;
  if (!final && seconds_since(last_report_) < config_.status_interval_s) return;
  last_report_ = Clock::now();
  // --cluster: a line per shard, named by its sidecar.
  const std::string source = config_.cluster ? " source=" + config_.server.to_string()
                                             : std::string();
  std::printf("%s%s offset=%llu lag_bytes=%llu lag_ms=%lld %s resyncs=%llu log_id=%llu\n",
              final ? final : "following", source.c_str(), static_cast<unsigned long long>(applied),
              static_cast<unsigned long long>(lag_bytes), lag_ms, sink_.progress().c_str(),
              static_cast<unsigned long long>(resyncs_),
              static_cast<unsigned long long>(header_.log_id));
  std::fflush(stdout);
}

// Every round, whatever --status-interval says: a scrape sees the lag now.
void Follower::publish_metrics(uint64_t applied, uint64_t lag_bytes, long long lag_ms) {
  gauges_.offset.set(static_cast<double>(applied));
  gauges_.lag_bytes.set(static_cast<double>(lag_bytes));
  gauges_.lag_seconds.set(static_cast<double>(lag_ms) / 1000.0);
}

// One round: decide from header_ whether the table can still be continued,
// then apply what is new, or wait a little if nothing is.
Result<FollowEnd> Follower::step(bool& idle) {
  if (header_.superseded())
    return FollowEnd{false, "the sidecar began a new replication history (the master answered "
                            "its reconnect with a full resync) and published a new table"};
  if (!change_log::holds(header_, read_pos_))
    return FollowEnd{false, "fell behind the change log: it now starts at offset " +
                                std::to_string(header_.start) + ", this replica needs it from " +
                                std::to_string(change_log::block_begin(header_, read_pos_)) +
                                " (a larger rdma-server --log-size gives followers more slack)"};
  if (header_.end < read_pos_)
    return Status::error("follow the change log",
                         "the log ends at offset " + std::to_string(header_.end) +
                             ", before this replica's " + std::to_string(read_pos_))
        .as(ErrorKind::kBadData);
  if (header_.end == read_pos_) {
    idle = true;
    RRS_RETURN_IF_ERROR(sink_.collect());
    RRS_RETURN_IF_ERROR(sink_.caught_up());
    forget_applied();
    return FollowEnd{};
  }
  idle = false;
  note_seen(header_.end);
  const uint64_t to = std::min<uint64_t>(header_.end, read_pos_ + tail_.max_chunk());
  auto copy = tail_.read(header_, read_pos_, to);
  if (!copy.ok()) {
    if (copy.status().kind() == ErrorKind::kBadData)
      return Status::error("follow the change log",
                           copy.status().message() + "; nothing from offset " +
                               std::to_string(read_pos_) + " on was applied")
          .as(ErrorKind::kBadData);
    if (copy.status().kind() != ErrorKind::kUnavailable) return copy.status();
    // The sidecar went away mid-read: the header read reconnects.
    auto again = refresh_header();
    if (!again.ok()) return again.status();
    return again->value_or(FollowEnd{});
  }
  if (!copy->intact)
    return FollowEnd{false, "fell behind the change log: the bytes from offset " +
                                std::to_string(read_pos_) +
                                " were overwritten while being read (a larger rdma-server "
                                "--log-size gives followers more slack)"};
  // The replies to the previous batch (the target had this round trip to
  // apply it), then this batch, sent without waiting for its replies.
  RRS_RETURN_IF_ERROR(sink_.collect());
  forget_applied();
  header_ = copy->after;
  if (copy->bytes.empty()) {  // its block is being written: next round, after a pause
    idle = true;
    return FollowEnd{};
  }
  RRS_RETURN_IF_ERROR(sink_.write(copy->bytes));
  read_pos_ += copy->bytes.size();
  RRS_RETURN_IF_ERROR(sink_.send());
  return FollowEnd{};
}

Status Follower::check_growth() {
  if (header_.end != grown_end_) {
    grown_end_ = header_.end;
    grown_at_ = Clock::now();
    return {};
  }
  if (config_.log_stall_s == 0 || seconds_since(grown_at_) < config_.log_stall_s) return {};
  // The sidecar cannot always say so itself (a link stuck, not broken): the
  // master's pings are the heartbeat.
  return Status::error("follow the change log",
                       "it has not grown past offset " + std::to_string(header_.end) + " for " +
                           std::to_string(config_.log_stall_s) +
                           " s (--log-stall), though the master pings the sidecar every "
                           "repl-ping-replica-period (10 s by default): the sidecar's link to "
                           "the master is stuck or was given up (rdma-server's log says why)")
      .as(ErrorKind::kUnavailable);
}

Result<FollowEnd> Follower::settled(FollowEnd end) {
  // What was sent is applied (or refused) before a resync flushes the target.
  RRS_RETURN_IF_ERROR(sink_.collect());
  return end;
}

std::optional<FollowEnd> Follower::another_log(uint64_t log_id) const {
  const uint64_t now = synced_.reader->descriptor().log_id;
  if (now == log_id) return std::nullopt;
  return FollowEnd{false, now == 0 ? "rdma-server now keeps no change log"
                                   : "rdma-server now serves another change log (it restarted, "
                                     "or the master made it resync)"};
}

Result<std::optional<FollowEnd>> Follower::let_go_of_table() {
  const uint64_t log_id = synced_.reader->descriptor().log_id;
  synced_.reader->set_log_only(true);
  Status s = synced_.reader->connect(Clock::now() + config_.connect_timeout);
  if (!s.ok()) {
    if (Status again = reconnect(s); !again.ok()) {
      if (!g_stop.load()) return again;                      // stalled
      return std::optional<FollowEnd>(FollowEnd{true, ""});  // stopped meanwhile
    }
  }
  return another_log(log_id);
}

Result<FollowEnd> Follower::run() {
  // From here on only the change log is read, on a connection that says so:
  // rdma-server may give the table's memory back (--table-retain).
  if (synced_.reader->descriptor().log_id != 0) {
    auto gone = let_go_of_table();
    if (!gone.ok()) return gone.status();
    if (*gone) return **gone;
  }
  RRS_RETURN_IF_ERROR(tail_.attach());
  auto first = refresh_header();
  if (!first.ok()) return first.status();
  if (*first) return **first;
  const table::Header& table = synced_.header;
  if (header_.replid != table.source_replid)
    return FollowEnd{false, "the change log follows replid " + header_.replid +
                                ", the table was taken from " + table.source_replid};
  if (!change_log::holds(header_, read_pos_))
    return FollowEnd{false,
                     "the change log no longer reaches back to this table's offset " +
                         std::to_string(read_pos_) + " (it starts at " +
                         std::to_string(header_.start) + ")",
                     true};
  log::info("following the master's stream from offset " + std::to_string(read_pos_) +
            " (change log " + std::to_string(header_.log_id) + ", a ring of " +
            std::to_string(header_.capacity) + " bytes)");
  auto pause = kIdleFirst;
  grown_end_ = header_.end;
  grown_at_ = Clock::now();
  while (!g_stop.load()) {
    RRS_RETURN_IF_ERROR(check_growth());
    bool idle = false;
    auto end = step(idle);
    if (!end.ok()) return end.status();  // the target refused or went away, or bad data
    if (end->stopped) break;
    if (!end->why.empty()) return settled(*end);
    if (config_.handoff && header_.end - read_pos_ <= kHandoffSlack) {
      // The master's backlog covers the rest (handoff checks that first).
      report("caught_up");
      FollowEnd caught_up;
      caught_up.caught_up = true;
      return caught_up;
    }
    report();
    if (!idle) {
      pause = kIdleFirst;
      continue;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, kIdleMax);
    Status alive = synced_.reader->keepalive();  // a failure: the header read reconnects
    (void)alive;
    auto again = refresh_header();
    if (!again.ok()) return again.status();
    if (*again && (*again)->stopped) break;
    if (*again) return settled(**again);
  }
  RRS_RETURN_IF_ERROR(sink_.collect());
  // Stopped before catching up: the target keeps no guard TTLs either way.
  RRS_RETURN_IF_ERROR(sink_.caught_up());
  forget_applied();
  report("stopped");
  return FollowEnd{true, ""};
}

}  // namespace rrs
