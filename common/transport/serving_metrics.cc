#include "common/transport/serving_metrics.h"

namespace rrs {
namespace {

metrics::Family& refusals() {
  return metrics::global().counters(
      "rrs_server_refusals_total",
      "Connections refused or dropped with an ERROR to the client, by transport and reason "
      "(the control protocol's error code: authentication_failed, server_full, ...).",
      {"transport", "reason"});
}

ServingMetrics make() {
  metrics::Registry& r = metrics::global();
  auto& clients = r.gauges("rrs_server_clients",
                           "Client connections now, by transport and state (tcp: handshake, "
                           "not yet authenticated, or authenticated, holding a --max-clients "
                           "slot; verbs: connected).",
                           {"transport", "state"});
  auto& reads = r.counters("rrs_server_reads_served_total",
                           "READ requests answered with table or change-log bytes (TCP; verbs "
                           "READs bypass the server's CPU).",
                           {"transport"});
  auto& bytes = r.counters("rrs_server_served_bytes_total",
                           "Table and change-log bytes queued in READ answers (TCP).",
                           {"transport"});
  refusals();
  return ServingMetrics{
      clients.gauge({"tcp", "handshake"}),
      clients.gauge({"tcp", "authenticated"}),
      clients.gauge({"verbs", "connected"}),
      reads.counter({"tcp"}),
      bytes.counter({"tcp"}),
      r.gauge("rrs_server_verbs_registrations",
              "Table registrations held over verbs (one per epoch and device): the current "
              "epoch's, and retired ones still pinned by a connected client."),
  };
}

}  // namespace

void ServingMetrics::refused(ServingTransport t, control::ErrorCode code) {
  // Rare, and already logged: the family's lookup under its lock is cheap enough.
  std::string reason = control::error_code_name(code);
  for (char& c : reason)
    if (c == ' ') c = '_';  // "server full" -> server_full
  refusals().counter({t == ServingTransport::kTcp ? "tcp" : "verbs", reason}).add();
}

const ServingMetrics& serving_metrics() {
  static const ServingMetrics m = make();
  return m;
}

}  // namespace rrs
