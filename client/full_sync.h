// One full sync, end to end: connect to the target Redis and the sidecar,
// validate the table, then fetch (its own thread) and load (this thread) at
// the same time. Returns the process exit code; prints the summary.
#pragma once

#include <memory>

#include "client/client_config.h"
#include "common/transport/transport.h"

namespace rrs {

// What a full sync leaves for follow mode: the connection to the sidecar and
// the header of the table that was loaded (its offset and replid).
struct SyncedTable {
  std::unique_ptr<TableReader> reader;
  table::Header header;
};

// `synced`, if given, receives the connection and header after a sync that
// loaded every record.
int run_full_sync(const ClientConfig& config, SyncedTable* synced = nullptr);

}  // namespace rrs
