// Snapshot from an RDB file (`--source rdb --rdb-file FILE`): a backup, or
// the dump.rdb of a stopped server, read in chunks and parsed as it is read
// (server/rdb_table_sink.h, as the PSYNC source does with the master's RDB),
// without touching any master. Every RDB version the parser reads: 1 to 12
// (REDIS: Redis 1.0 to 8.0) and 80 (VALKEY). Values are carried in the
// encodings the file holds (a Redis 2.4 zipmap or ziplist included) and
// their DUMP payloads stamped with the file's version: Redis 7.0 and 8.0 and
// Valkey 8.0 and 9.1 RESTORE every type of RDB 1 to 5 at that version, and
// load an RDB stream of it (tests/integration/rdb_old_versions_test.cc).
//
// The table is the keyspace as of the file. When the file carries its
// server's replication ID and offset (the repl-id and repl-offset aux fields:
// Redis and Valkey write them when saving on a replica, or on a master that
// has a replication backlog), the table is placed at that offset of that
// history, so a replica loaded from it (rdma-client --mode replica
// --handoff) can continue from the master with a partial resync while the
// master's backlog still reaches back to it. There is no change log.
#pragma once

#include <string>

#include "proto/rdb_parser.h"
#include "server/snapshot_source.h"

namespace rrs {

class RdbFileSource final : public SnapshotSource {
 public:
  // Bytes read from the file at a time.
  static constexpr size_t kChunk = 4u << 20;

  explicit RdbFileSource(std::string path, rdb::Limits limits = {})
      : path_(std::move(path)), limits_(limits) {}

  // A file that cannot be opened (or is a directory) is kUsage, naming the
  // path and the system's reason; bytes the parser refuses, or a file that
  // ends inside the RDB, are kBadData with the byte offset.
  Result<SnapshotStats> snapshot(TableBuilder& into) override;

 private:
  std::string path_;
  rdb::Limits limits_;
};

}  // namespace rrs
