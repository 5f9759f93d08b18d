// rdma-server's own metrics (names rrs_server_*): the published epoch and
// its table, snapshots, the master link and the change log. The table
// servers' are in common/transport/serving_metrics.h. Registered in
// metrics::global() by register_server_metrics(), at start.
#pragma once

#include <memory>
#include <mutex>
#include <set>

#include "common/metrics/registry.h"
#include "common/table/table.h"

namespace rrs {

class ServerMetrics {
 public:
  ServerMetrics();

  // A table was published (first, or a new epoch): its numbers, and the
  // change log whose offsets the scrape reads from now on. Any thread.
  void published(const Table& table, double build_s);
  // The table was given back (--table-retain): no table is held now; the
  // epoch and change log gauges stay as they were.
  void released();
  // Which wires are TLS (1) or clear text (0): the table's to clients
  // (verbs never is), and every connection to Redis. Set once, at start.
  void encrypted(bool table, bool redis);
  // The master link (psync): up or down, and the offset our copy reached.
  metrics::Gauge& master_link_up;
  metrics::Gauge& master_offset;

 private:
  metrics::Family& records_;
  metrics::Gauge& epoch_;
  metrics::Gauge& epoch_created_;
  metrics::Gauge& table_bytes_;
  metrics::Gauge& heap_bytes_;
  metrics::Counter& snapshots_;
  metrics::Gauge& snapshot_seconds_;
  metrics::Gauge& snapshot_seconds_total_;
  std::mutex mu_;
  ChangeLogPtr log_;        // the current table's, read at each scrape
  std::set<uint32_t> dbs_;  // every DB a table has held
};

// The process's instance (made, and every metric registered, on first call).
ServerMetrics& server_metrics();

}  // namespace rrs
