// Where a full sync puts the records it fetched: one interface, one
// implementation per load path (sync_driver.h drives them all).
//
//   RestoreSink (restore/): pipelined RESTORE into the target, or into
//   staging DBs swapped in at the end (--atomic).
//   ReplicaSink (replica/): an RDB written on the fly down the target's
//   replica link.
//   CountingSink (sync/): loads nothing (--no-load).
//
// The driver calls, in order: connect, target, (waits for the whole table
// if the sink needs it), check, (fetch thread starts),
// prepare, load per batch, drain, take_failures, finish, verdict; abandon after any
// failure from prepare to finish. When the failure was the sidecar replacing
// the epoch, start_over instead, and all again from connect. A new load path
// is a new sink, not a new driver.
// Where the target does not read the master's RDB version, the sink is
// handed the table and records already converted (sync/conversion.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/fetch/record_batch.h"
#include "client/fetch/table_fetcher.h"
#include "common/base/status.h"
#include "proto/server_version.h"

namespace rrs {

// What a sink put into its target, for the summary lines.
struct LoadCounts {
  uint64_t keys = 0;
  uint64_t bytes = 0;  // key + payload bytes
  std::map<uint32_t, uint64_t> per_db;
  uint32_t functions = 0;  // function libraries
  uint64_t scripts = 0;    // Lua scripts
  uint64_t skipped_expired = 0;
  uint64_t failed = 0;  // records and scripts the target refused or that failed validation
};

class LoadSink {
 public:
  virtual ~LoadSink() = default;
  // Connects to the target, before the sidecar is reached.
  virtual Status connect() = 0;
  // The target's engine and version, once connected; nullopt for a sink
  // that loads nothing.
  virtual std::optional<ServerVersion> target() const { return std::nullopt; }
  // Why this load path needs the whole table (its DB list) before it loads,
  // or "" when it loads a table still being written as it comes. The
  // driver then waits for the table to be complete before check().
  virtual std::string needs_whole_table() const { return ""; }
  // Checks the target can take the table, changing nothing; the fetch thread
  // starts after this. The table may still be being written
  // (!info.complete(): no DB list yet, more records to come): what needs the
  // DB list is checked per record then. `info` stays valid and unchanged
  // until the fetch thread is done; then, before finish(), the driver
  // updates it to the complete table.
  virtual Status check(const TableInfo& info) = 0;
  // Makes the target ready for the first batch (flush, staging, REPLICAOF).
  virtual Status prepare(const TableInfo& info) = 0;
  virtual Status load(const RecordBatch& batch) = 0;
  // After the last batch, also when the fetch failed: waits until the
  // target answered everything sent, so the counts say what it holds.
  virtual Status drain() { return {}; }
  // The records that failed validation after every retry: skip them (and
  // count them) or refuse to go on without them.
  virtual Status take_failures(const std::vector<RecordFailure>& failures) = 0;
  // After the last batch: returns once the target holds everything.
  virtual Status finish() = 0;
  // After the summary line: whether the run did all it should (a failure
  // here, kind kFailed, says what the target lacks: records not loaded,
  // functions not applied).
  virtual Status verdict() const { return {}; }
  // After a failure from prepare() on: leaves the target in a state it
  // names (detached, staging flushed, ...) and says what it holds.
  // `invalid_records`: records that had failed validation by then.
  virtual void abandon(const Status& why, uint64_t invalid_records, double seconds) = 0;
  // After a failure because the sidecar replaced the epoch being read (it
  // restarted, or took a newer snapshot): undoes what this attempt did to
  // the target, so that the driver can run the sync again from connect() on
  // the new epoch; or says why it cannot, changing nothing (the driver then
  // calls abandon()).
  virtual Status start_over() {
    return Status::error(
        "start over",
        "this load path cannot start a sync over on a new epoch; run the client again");
  }

  virtual LoadCounts counts() const = 0;
  // Fields of this load path's own for the summary line, " name=value" each.
  virtual std::string summary_fields() const { return ""; }
  // Whether records go anywhere: the summary line is `synced`, else
  // `fetched` (the transfer alone).
  virtual bool loads() const { return true; }
};

}  // namespace rrs
