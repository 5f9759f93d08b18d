#include "server/server_metrics.h"

#include "common/base/clock.h"
#include "common/base/log.h"
#include "common/transport/serving_metrics.h"

namespace rrs {

void ServerMetrics::encrypted(bool table, bool redis) {
  auto& tls = metrics::global().gauges(
      "rrs_server_tls",
      "1 where a wire is encrypted with TLS, 0 where it is clear text: wire=table (to clients; "
      "never over verbs) and wire=redis (to the master).",
      {"wire"});
  tls.gauge({"table"}).set(table ? 1 : 0);
  tls.gauge({"redis"}).set(redis ? 1 : 0);
}

ServerMetrics::ServerMetrics()
    : master_link_up(metrics::global().gauge(
          "rrs_server_master_link_up",
          "1 while the replication link to the master streams (psync), else 0.")),
      master_offset(metrics::global().gauge(
          "rrs_server_master_offset_bytes",
          "The master's replication offset our copy of its stream has reached (psync).")),
      records_(metrics::global().gauges("rrs_server_table_records",
                                        "Records in the published table, by DB.", {"db"})),
      epoch_(metrics::global().gauge("rrs_server_epoch",
                                     "The published table's epoch (its creation time in ms).")),
      epoch_created_(metrics::global().gauge(
          "rrs_server_epoch_created_timestamp_seconds",
          "When the published table was built (Unix time); its age is time() minus this.")),
      table_bytes_(metrics::global().gauge(
          "rrs_server_table_bytes",
          "Size of the table held, header to heap (0 when none is: not taken yet, or given "
          "back after --table-retain).")),
      heap_bytes_(metrics::global().gauge(
          "rrs_server_table_heap_bytes",
          "Bytes of the published table's heap (records too big for their slot).")),
      snapshots_(metrics::global().counter("rrs_server_snapshots_total",
                                           "Tables built and published (first and later epochs).")),
      snapshot_seconds_(metrics::global().gauge(
          "rrs_server_snapshot_last_duration_seconds",
          "How long the last published table took: the snapshot (psync: from the master's "
          "+FULLRESYNC) and the build.")),
      snapshot_seconds_total_(metrics::global()
                                  .counters("rrs_server_snapshot_duration_seconds_total",
                                            "Time spent building the tables published, in all.")
                                  .fractional_counter()) {
  serving_metrics();
  metrics::global()
      .gauges("rrs_server_epoch_age_seconds", "How long ago the published table was built.")
      .gauge_fn({}, [this] {
        const double created = epoch_created_.value();
        return created > 0 ? static_cast<double>(unix_ms()) / 1000.0 - created : 0.0;
      });
  auto& log = metrics::global().gauges(
      "rrs_server_change_log_offset_bytes",
      "The change log's held stream positions: start (oldest byte still held) and end.", {"edge"});
  log.gauge_fn({"start"}, [this] {
    std::lock_guard lock(mu_);
    return log_ ? static_cast<double>(log_->start()) : 0.0;
  });
  log.gauge_fn({"end"}, [this] {
    std::lock_guard lock(mu_);
    return log_ ? static_cast<double>(log_->end()) : 0.0;
  });
  metrics::global()
      .gauges("rrs_server_change_log_bytes", "Stream bytes the change log holds now (end - start).")
      .gauge_fn({}, [this] {
        std::lock_guard lock(mu_);
        return log_ ? static_cast<double>(log_->end() - log_->start()) : 0.0;
      });
  metrics::global()
      .gauges("rrs_server_change_log_capacity_bytes", "The change log's ring size (--log-size).")
      .gauge_fn({}, [this] {
        std::lock_guard lock(mu_);
        return log_ ? static_cast<double>(log_->capacity()) : 0.0;
      });
}

void ServerMetrics::published(const Table& table, double build_s) {
  const table::Header& h = table.final_header();
  epoch_.set(static_cast<double>(h.epoch));
  epoch_created_.set(static_cast<double>(h.created_unix_ms) / 1000.0);
  table_bytes_.set(static_cast<double>(h.total_size));
  heap_bytes_.set(static_cast<double>(h.heap_size));
  snapshots_.add();
  snapshot_seconds_.set(build_s);
  snapshot_seconds_total_.add(build_s);
  auto dbs = table::decode_db_directory(h,
                                        table.bytes.span().subspan(h.dbdir_offset, h.dbdir_size));
  std::lock_guard lock(mu_);
  // A DB the new table no longer holds shows 0, not its old count.
  for (uint32_t db : dbs_) records_.gauge({std::to_string(db)}).set(0);
  if (dbs.ok())
    for (const table::DbEntry& db : *dbs) {
      records_.gauge({std::to_string(db.db)}).set(static_cast<double>(db.key_count));
      dbs_.insert(db.db);
    }
  log_ = table.log;
}

void ServerMetrics::released() {
  table_bytes_.set(0);
  heap_bytes_.set(0);
  std::lock_guard lock(mu_);
  for (uint32_t db : dbs_) records_.gauge({std::to_string(db)}).set(0);
}

ServerMetrics& server_metrics() {
  static ServerMetrics m;
  return m;
}

}  // namespace rrs
