// rdma-client's metrics (names rrs_client_*): the table fetched, records
// loaded and failed, conversions, and follow mode's lag and progress.
// Registered in metrics::global() on first use of client_metrics(), which
// main() makes at start when --metrics is given, so every name is listed
// from the first scrape. Every member is one atomic: any thread.
#pragma once

#include <array>
#include <string>

#include "common/base/status.h"
#include "common/metrics/registry.h"
#include "proto/rdb_convert.h"

namespace rrs {

struct ClientMetrics {
  ClientMetrics();

  // The table: its records and bytes, and how much of it was read.
  metrics::Gauge& table_records;
  metrics::Gauge& table_bytes;
  metrics::Counter& fetched_records;
  metrics::Counter& fetched_bytes;
  // Conversion for an older target: records converted, those whose bytes
  // changed (the rest were restamped), those that lost a part, per kind.
  metrics::Counter& converted;
  metrics::Counter& reencoded;
  std::array<metrics::Counter*, rdb::kLossKindCount> lossy{};
  // Syncs finished (every record loaded or knowingly skipped).
  metrics::Counter& syncs;
  // Follow mode: a follower's progress, one series per sidecar followed
  // (label `source`, its host:port; --cluster follows one per shard).
  struct FollowGauges {
    metrics::Gauge& offset;
    metrics::Gauge& lag_bytes;
    metrics::Gauge& lag_seconds;
  };
  FollowGauges follow(const std::string& source);
  metrics::Counter& commands_applied;
  metrics::Counter& resyncs;
  metrics::Counter& reconnects;

  // A sync's end (sync/sync_driver.cc adds them): what the target took,
  // what failed validation or the target refused, what had expired.
  metrics::Counter& loaded_records;
  metrics::Counter& loaded_bytes;
  metrics::Counter& failed_invalid;
  metrics::Counter& failed_refused;
  metrics::Counter& skipped_expired;
  // Which wires are TLS (1) or clear text (0): the table's from rdma-server
  // (verbs never is), and every connection to Redis. Set once, at start.
  void encrypted(bool table, bool redis);
  // A failure the client carries on after (a follower reconnects, a sync
  // starts over); the run's last ends it, and its metrics with it.
  void failed(const Status& s);

 private:
  metrics::Family& follow_offset_;
  metrics::Family& follow_lag_bytes_;
  metrics::Family& follow_lag_seconds_;
  metrics::Family& errors_;
  metrics::Gauge& last_error_;
};

ClientMetrics& client_metrics();

}  // namespace rrs
