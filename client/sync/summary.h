// The lines a sync prints on stdout for scripts and tests to read, defined
// once for every load path:
//
//   synced keys= bytes= dbs= functions= scripts= skipped_expired= failed=
//          seconds= transfer_s= MBps= keys_per_s= epoch= [load path's fields]
//   fetched keys= functions= scripts= table_bytes= failed= seconds= MBps= epoch=
//   incomplete keys= bytes= dbs= functions= scripts= skipped_expired= failed=
//          unacknowledged= table_keys= seconds= epoch= target= [staged_keys= staging=]
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "client/sync/load_sink.h"

namespace rrs {

struct SyncReport {
  LoadCounts counts;
  double seconds = 0;     // since the run started
  double transfer_s = 0;  // until the last table byte was read and validated
  double fetch_s = 0;     // from the first record read to the last
  uint64_t table_bytes = 0;
  uint64_t epoch = 0;
  std::string fields;  // the load path's own, " name=value" each
};

void print_synced(const SyncReport& r);
void print_fetched(const SyncReport& r);

// A sync that stopped before the end. `target`: "partial" (it holds what
// keys= says), "untouched", or "untouched-staging-left".
struct IncompleteReport {
  LoadCounts counts;
  uint64_t unacknowledged = 0;
  uint64_t table_keys = 0;
  double seconds = 0;
  uint64_t epoch = 0;
  std::string target;
  std::string staging;  // --atomic: "0:15,1:14"; keys then went to staging only
};
void print_incomplete(const IncompleteReport& r);

// "0:1000,3:20": keys per DB, "-" for none.
std::string db_counts(const std::map<uint32_t, uint64_t>& per_db);

}  // namespace rrs
