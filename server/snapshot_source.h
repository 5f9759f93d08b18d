// Where a table's records come from: `--source psync` (server/psync_source.h,
// a consistent snapshot from the master's own replication stream) or
// `--source scan` (server/scan_source.h, SCAN + DUMP).
#pragma once

#include <optional>

#include "common/base/status.h"
#include "server/source_role.h"
#include "server/table_builder.h"

namespace rrs {

struct SnapshotStats {
  uint64_t keys = 0;
  uint64_t vanished = 0;    // listed by SCAN but gone before DUMP
  uint64_t failed = 0;      // DUMP refused (e.g. a module type without DUMP support)
  uint64_t functions = 0;   // function libraries carried
  uint64_t scripts = 0;     // Lua scripts carried (RDBs of Redis < 7.0)
  uint64_t module_aux = 0;  // module data that is not a key: cannot be carried
  uint64_t rdb_bytes = 0;   // psync: the RDB's size
  // psync: from the master's +FULLRESYNC to the RDB's last byte (its fork
  // and the RDB), for build_s of the `published` line.
  double rdb_seconds = 0;
  // The cluster slots the source's shard served; nullopt: not a cluster node.
  std::optional<SlotRanges> hash_slots;
  // psync: the source's role when the snapshot was taken (kUnknown for the
  // other sources, or without +info).
  SourceRole source_role;
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Copies every key of the master into `into` (and its source description).
  virtual Result<SnapshotStats> snapshot(TableBuilder& into) = 0;
};

}  // namespace rrs
