// One full sync, whatever the load path: connect the sink to its target,
// open the sidecar's table, check the target, then fetch (its own thread)
// and load (this thread) at once, with progress on stderr and the summary
// line on stdout at the end.
//
//   sink.connect  ->  open table  ->  sink.check  ->  fetch thread starts
//   ->  sink.prepare  ->  sink.load per batch  ->  sink.drain  ->  sink.take_failures
//   ->  sink.finish  ->  `synced` line  ->  sink.verdict
//
// A failure from prepare on is handed to sink.abandon, which leaves the
// target in a state it names, then returned.
#pragma once

#include <memory>

#include "client/client_config.h"
#include "client/sync/load_sink.h"
#include "common/transport/transport.h"

namespace rrs {

// What a sync that loaded every record leaves for follow mode: the
// connection to the sidecar and the header of the table (offset, replid).
struct SyncedTable {
  std::unique_ptr<TableReader> reader;
  table::Header header;
};

// Runs the sync into `sink`. An error after the summary line was printed
// (some records not loaded) has kind kFailed.
Result<SyncedTable> run_sync(const ClientConfig& config, LoadSink& sink);

}  // namespace rrs
