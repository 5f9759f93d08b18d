// The sidecar's table as a sync sees it: connected, its header, DB directory
// and scripts region validated, and a fetcher ready to stream the records
// into `queue` once run on a thread. Both ingest modes start here.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "client/client_config.h"
#include "client/fetch/table_fetcher.h"

namespace rrs {

struct RemoteTable {
  std::unique_ptr<TableReader> reader;
  BlockingQueue<RecordBatch> queue{8};
  std::unique_ptr<TableFetcher> fetcher;
  TableInfo info;
};

// Connects (retrying until t0 + --connect-timeout), opens the table and logs
// what it holds.
Result<std::unique_ptr<RemoteTable>> open_remote_table(const ClientConfig& config,
                                                       Clock::time_point t0);

}  // namespace rrs
