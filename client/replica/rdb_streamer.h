// Writes the RDB of a replica-mode sync down the target's replica link, on
// the fly from the fetched records (rdb::RdbWriter): header and AUX fields,
// functions, then per batch SELECTDB and keys, then EOF and (from RDB 5)
// the CRC-64.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "client/fetch/table_fetcher.h"
#include "client/replica/replica_link.h"
#include "common/base/clock.h"
#include "proto/rdb_writer.h"

namespace rrs {

struct ReplicaStats {
  uint64_t keys = 0;
  uint64_t bytes = 0;  // key + payload bytes
  std::map<uint32_t, uint64_t> per_db;
};

class RdbStreamer {
 public:
  // RDB bytes gathered before a write to the target: large enough to make
  // each send() worth its system call, small enough to keep the target busy
  // early.
  static constexpr size_t kSendThreshold = 1u << 20;

  RdbStreamer(const TableInfo& info, ReplicaLink& link, std::string_view replid, uint64_t offset)
      : info_(info), link_(link), writer_(static_cast<uint16_t>(info.header.rdb_version)) {
    writer_.aux(info.header.engine == Engine::kValkey ? "valkey-ver" : "redis-ver",
                info.header.server_version);
    writer_.aux("redis-bits", "64");
    writer_.aux("ctime", std::to_string(unix_us() / 1000000));
    writer_.aux("used-mem", "0");
    // The DB the master's stream has selected at the offset: the target's
    // link to its master starts there. After a full sync the master forces
    // a SELECT before the first command (psync: 0 does); after an RDB file's
    // offset the stream may go on without one.
    writer_.aux("repl-stream-db", std::to_string(info.header.source_stream_db));
    writer_.aux("repl-id", replid);
    writer_.aux("repl-offset", std::to_string(offset));
    writer_.aux("aof-base", "0");
    for (const table::DbEntry& e : info.dbs) dbs_[e.db] = e;
  }

  Status begin() {
    RRS_RETURN_IF_ERROR(writer_.functions(info_.scripts.function_payload));
    return flush_if(0);
  }
  Status add(const RecordBatch& batch) {
    for (const Record& r : batch.records) {
      if (r.db != db_) {
        // RESIZEDB is a sizing hint: 0 keys where the table was still being
        // written when the RDB began (no DB directory yet).
        auto e = dbs_.find(r.db);
        const table::DbEntry sizes = e == dbs_.end() ? table::DbEntry{} : e->second;
        writer_.select_db(r.db, sizes.key_count, sizes.expires_count);
        db_ = r.db;
      }
      RRS_RETURN_IF_ERROR(writer_.key(r.key, r.payload, r.expire_at_ms));
      ++stats_.keys;
      ++stats_.per_db[r.db];
      stats_.bytes += r.key.size() + r.payload.size();
    }
    return flush_if(kSendThreshold);
  }
  Status end() {
    writer_.end();
    RRS_RETURN_IF_ERROR(flush_if(0));
    return link_.end_rdb();
  }
  const ReplicaStats& stats() const { return stats_; }
  uint64_t rdb_bytes() const { return writer_.bytes(); }

 private:
  Status flush_if(size_t threshold) {
    if (writer_.pending() == 0 || writer_.pending() < threshold) return {};
    return link_.send(writer_.take());
  }

  const TableInfo& info_;
  ReplicaLink& link_;
  rdb::RdbWriter writer_;
  std::map<uint32_t, table::DbEntry> dbs_;
  int64_t db_ = -1;
  ReplicaStats stats_;
};

}  // namespace rrs
