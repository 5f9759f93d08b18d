#include "client/client_metrics.h"

#include "common/base/clock.h"

namespace rrs {
namespace {

metrics::Registry& r() { return metrics::global(); }

const char* kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::kUnavailable: return "unavailable";
    case ErrorKind::kBadData: return "bad_data";
    case ErrorKind::kDenied: return "denied";
    case ErrorKind::kRefused: return "refused";
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kFailed: break;
  }
  return "failed";
}

}  // namespace

ClientMetrics::ClientMetrics()
    : table_records(r().gauge("rrs_client_table_records", "Records in the table being synced.")),
      table_bytes(r().gauge("rrs_client_table_bytes", "Size of the table being synced.")),
      fetched_records(r().counter("rrs_client_fetched_records_total",
                                  "Records read from the sidecar's table and validated.")),
      fetched_bytes(r().counter("rrs_client_fetched_bytes_total",
                                "Table bytes read from the sidecar (verbs READs or TCP).")),
      converted(r().counters("rrs_client_converted_records_total",
                             "Records converted for a target older than the master's RDB, by "
                             "how: reencoded (their bytes changed) or all (restamped included).",
                             {"how"})
                    .counter({"all"})),
      reencoded(
          r().counters("rrs_client_converted_records_total", "", {"how"}).counter({"reencoded"})),
      syncs(r().counter("rrs_client_syncs_total", "Full syncs that finished.")),
      commands_applied(r().counter("rrs_client_commands_applied_total",
                                   "Stream commands applied to the target (--follow, restore "
                                   "mode).")),
      resyncs(r().counter("rrs_client_resyncs_total",
                          "Full syncs again while following (the log no longer continued the "
                          "table).")),
      reconnects(
          r().counter("rrs_client_reconnects_total", "Reconnects to the sidecar while following.")),
      loaded_records(r().counter("rrs_client_loaded_records_total",
                                 "Records (keys) the target took, counted when a sync ends.")),
      loaded_bytes(r().counter("rrs_client_loaded_bytes_total",
                               "Key and payload bytes the target took, counted when a sync "
                               "ends.")),
      failed_invalid(r().counters("rrs_client_failed_records_total",
                                  "Records not loaded, by reason: invalid (failed validation) "
                                  "or refused (by the target).",
                                  {"reason"})
                         .counter({"invalid"})),
      failed_refused(
          r().counters("rrs_client_failed_records_total", "", {"reason"}).counter({"refused"})),
      skipped_expired(r().counter("rrs_client_skipped_expired_records_total",
                                  "Records not loaded because their TTL had passed.")),
      follow_offset_(r().gauges("rrs_client_follow_offset_bytes",
                                "The master's replication offset the target has been given, "
                                "by sidecar followed.",
                                {"source"})),
      follow_lag_bytes_(r().gauges("rrs_client_follow_lag_bytes",
                                   "Change-log bytes not yet applied to the target, by sidecar "
                                   "followed.",
                                   {"source"})),
      follow_lag_seconds_(r().gauges("rrs_client_follow_lag_seconds",
                                     "How long the oldest unapplied change-log byte has waited, "
                                     "by sidecar followed.",
                                     {"source"})),
      errors_(r().counters("rrs_client_errors_total",
                           "Failures logged, by kind (unavailable, bad_data, denied, refused, "
                           "usage, failed).",
                           {"kind"})),
      last_error_(r().gauge("rrs_client_last_error_timestamp_seconds",
                            "When the last failure was logged (Unix time; 0: none).")) {
  auto& lossy_family = r().counters(
      "rrs_client_lossy_records_total",
      "Records converted with a part the target cannot hold dropped, by kind "
      "(--allow-lossy-conversion).",
      {"kind"});
  for (size_t i = 0; i < lossy.size(); ++i) lossy[i] = &lossy_family.counter({rdb::loss_key(i)});
  for (ErrorKind k : {ErrorKind::kUnavailable, ErrorKind::kBadData, ErrorKind::kDenied,
                      ErrorKind::kRefused, ErrorKind::kUsage, ErrorKind::kFailed})
    errors_.counter({kind_name(k)});
}

ClientMetrics::FollowGauges ClientMetrics::follow(const std::string& source) {
  return {follow_offset_.gauge({source}), follow_lag_bytes_.gauge({source}),
          follow_lag_seconds_.gauge({source})};
}

void ClientMetrics::encrypted(bool table, bool redis) {
  auto& tls = metrics::global().gauges(
      "rrs_client_tls",
      "1 where a wire is encrypted with TLS, 0 where it is clear text: wire=table (from "
      "rdma-server; never over verbs) and wire=redis (to the target and any Redis source).",
      {"wire"});
  tls.gauge({"table"}).set(table ? 1 : 0);
  tls.gauge({"redis"}).set(redis ? 1 : 0);
}

void ClientMetrics::failed(const Status& s) {
  if (s.ok()) return;
  errors_.counter({kind_name(s.kind())}).add();
  last_error_.set(static_cast<double>(unix_ms()) / 1000.0);
}

ClientMetrics& client_metrics() {
  static ClientMetrics m;
  return m;
}

}  // namespace rrs
