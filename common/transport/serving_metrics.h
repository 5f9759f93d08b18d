// What the table servers count for rdma-server's /metrics: clients by
// transport and state, refusals by reason, reads and bytes served. Each
// hook is one relaxed atomic operation on a series made at registration.
#pragma once

#include "common/metrics/registry.h"
#include "proto/control.h"

namespace rrs {

enum class ServingTransport { kTcp, kVerbs };

struct ServingMetrics {
  // TCP connections in their handshake, and authenticated ones (holding a
  // slot of --max-clients); verbs connections, whatever their state.
  metrics::Gauge& tcp_handshaking;
  metrics::Gauge& tcp_authenticated;
  metrics::Gauge& verbs_connected;
  // READ requests answered, and the table and change-log bytes in them.
  // TCP only: a verbs READ never reaches the server's CPU.
  metrics::Counter& tcp_reads;
  metrics::Counter& tcp_bytes;
  // Table registrations (per device) held over verbs: the current epoch's,
  // and retired ones still pinned by a connected client.
  metrics::Gauge& verbs_registrations;

  // A connection refused (or dropped) with `code`, which its peer is told.
  static void refused(ServingTransport t, control::ErrorCode code);
};

// The series, registered in metrics::global() on first call (rdma-server
// calls it at start, so every name is listed from the first scrape).
const ServingMetrics& serving_metrics();

}  // namespace rrs
