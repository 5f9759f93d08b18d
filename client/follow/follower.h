// One follower: tails one sidecar's change log from a synced table's offset
// and hands the bytes to a StreamSink, with status lines, reconnects, and
// the checks that say when the log no longer continues the table. Shared by
// standalone follow mode (follow.cc) and --cluster --follow (one per shard).
#pragma once

#include <deque>
#include <string>

#include "client/client_config.h"
#include "client/client_metrics.h"
#include "client/follow/log_tail.h"
#include "client/follow/stream_sink.h"
#include "client/sync/sync_driver.h"
#include "common/base/clock.h"

namespace rrs {

// SIGINT/SIGTERM (or request_stop) stop every follower after its current
// batch; during a (re)sync they keep their default action, as for a plain
// full sync.
void catch_stop_signals(bool on);
bool stop_requested();
void request_stop();

// How following one table ended.
struct FollowEnd {
  bool stopped = false;  // by a signal; else resync, for `why`
  std::string why;
  // The table just loaded was already older than the log reaches: wait for
  // the sidecar's next snapshot rather than load the same table again.
  bool wait_for_new_table = false;
  // --handoff: the target has been given all but at most kHandoffSlack of
  // what the log holds.
  bool caught_up = false;
};

class Follower {
 public:
  // `config.server`: the sidecar; with config.cluster, status lines name it.
  Follower(const ClientConfig& config, SyncedTable& synced, StreamSink& sink, uint64_t resyncs)
      : config_(config),
        synced_(synced),
        tail_(*synced.reader, config.io_timeout, config.chunk_size),
        sink_(sink),
        read_pos_(synced.header.source_offset),
        resyncs_(resyncs),
        gauges_(client_metrics().follow(config.server.to_string())) {}

  Result<FollowEnd> run();

 private:
  Result<FollowEnd> step(bool& idle);
  // Reconnects as a log-only client (the table is loaded); a FollowEnd if
  // the sidecar now serves another log.
  Result<std::optional<FollowEnd>> let_go_of_table();
  // Why following ends if the sidecar no longer serves log `log_id`.
  std::optional<FollowEnd> another_log(uint64_t log_id) const;
  // `end`, once the replies to everything sent are in.
  Result<FollowEnd> settled(FollowEnd end);
  // The header, reconnecting (for as long as it takes) if the sidecar went
  // away; a FollowEnd if the sidecar now serves another log.
  Result<std::optional<FollowEnd>> refresh_header();
  Status reconnect(const Status& cause);
  // A status line: periodic ("following") when `final` is null, else `final`.
  void report(const char* final = nullptr);
  void publish_metrics(uint64_t applied, uint64_t lag_bytes, long long lag_ms);

  const ClientConfig& config_;
  SyncedTable& synced_;
  LogTail tail_;
  StreamSink& sink_;
  change_log::Header header_;
  uint64_t read_pos_;  // stream position of the next byte to read
  uint64_t resyncs_;
  ClientMetrics::FollowGauges gauges_;  // this sidecar's series
  // When this client first saw the stream reach each end it has not applied
  // yet, oldest first: lag_ms is how long the oldest has waited.
  struct Seen {
    uint64_t end;
    Clock::time_point at;
  };
  std::deque<Seen> unapplied_;
  // The log's end when it last grew, and when: a live log grows at least
  // with every ping of the master (--log-stall).
  uint64_t grown_end_ = 0;
  Clock::time_point grown_at_;
  Status check_growth();
  void note_seen(uint64_t end) {
    if (unapplied_.empty() || unapplied_.back().end < end)
      unapplied_.push_back({end, Clock::now()});
  }
  void forget_applied() {
    // Bytes up to an entry's end were all seen by its time, so once the
    // entry before it is applied, the oldest unapplied byte dates from it.
    while (!unapplied_.empty() && unapplied_.front().end <= sink_.applied()) unapplied_.pop_front();
  }
  Clock::time_point last_report_ = Clock::now();
};

}  // namespace rrs
