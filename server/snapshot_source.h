// Where a table's records come from. `--source scan` walks the keyspace with
// SCAN + DUMP; a PSYNC source (a consistent snapshot from the master's own
// replication stream) plugs in behind the same interface.
#pragma once

#include "common/status.h"
#include "server/table_builder.h"

namespace rrs {

struct SnapshotStats {
  uint64_t keys = 0;
  uint64_t vanished = 0;  // listed by SCAN but gone before DUMP
  uint64_t failed = 0;    // DUMP refused (e.g. a module type without DUMP support)
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Copies every key of the master into `into` (and its source description).
  virtual Result<SnapshotStats> snapshot(TableBuilder& into) = 0;
};

}  // namespace rrs
