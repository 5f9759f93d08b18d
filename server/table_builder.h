// Builds one epoch of the mapping table from records handed over by a
// snapshot source, in DB order, as they arrive. Each record is written once,
// straight to its final bytes: inline in its slot, or in the heap. The slot
// size depends on the records (proto/slot_size.h), so it is chosen from the
// first ones (a sample held back until then). Slots and heap grow in mappings
// of their own; build() moves their pages into the table (no copy) and writes
// the header last, so a table is never seen half-built.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/table/table.h"
#include "proto/slot_size.h"
#include "proto/table_layout.h"

namespace rrs {

struct SourceInfo {
  ServerVersion server;  // the engine and version the data came from
  table::SourceKind kind = table::SourceKind::kScan;
  uint64_t replication_offset = 0;
  std::string replid;
  // The master's RDB header (psync): what the payloads' type numbers mean.
  // 0 (scan): the payloads' own version, or the server's newest without any.
  uint16_t rdb_version = 0;
  uint32_t module_aux = 0;  // module data (MODULE_AUX) the table does not carry
  // The DB the replication stream had selected at replication_offset (the
  // RDB's repl-stream-db): a master's stream after a full sync begins with a
  // SELECT, but a replica's need not (its master's stream, passed on).
  uint32_t stream_db = 0;
};

class TableBuilder {
 public:
  void set_source(SourceInfo info) { source_ = std::move(info); }
  // Records must come grouped by DB in increasing DB order (an RDB and the
  // scan source both do); build() refuses a table whose order was broken.
  void add(uint32_t db, std::string_view key, std::string_view payload, int64_t expire_at_ms);
  // A record straight from an RDB: the DUMP payload is built in place from
  // the value's raw bytes (type, value, RDB version, CRC64). An empty
  // collection is left out and counted, as the server's own loader does.
  void add_rdb_value(uint32_t db, std::string_view key, uint8_t type, std::string_view value,
                     uint16_t rdb_version, int64_t expire_at_ms);
  // The master's Redis Functions: exactly what FUNCTION DUMP returned, holding
  // `libraries` libraries. Replaces an earlier payload; an empty one clears it.
  void set_function_payload(std::string payload, uint32_t libraries);
  // A Lua script body a pre-7.0 master shipped in its RDB, for SCRIPT LOAD.
  void add_lua_script(std::string body);
  // The cluster slots the source's shard serves (nullopt: not a cluster node).
  void set_hash_slots(std::optional<SlotRanges> slots) { scripts_.hash_slots = std::move(slots); }

  uint64_t record_count() const { return records_ + sample_.size(); }
  uint64_t staged_bytes() const { return data_bytes_; }
  // A key the source listed and could not copy: counted in the header
  // (keys_lost), so a client does not take the table for the whole keyspace.
  void count_lost_key() { ++keys_lost_; }

  // Lays out and returns the table; the builder is empty again afterwards.
  Result<std::shared_ptr<Table>> build(uint64_t epoch);
  // How the last build chose its slot size.
  const table::SlotSizeChoice& slot_choice() const { return choice_; }

 private:
  // The sample the slot size is chosen from: this many records or bytes.
  static constexpr size_t kSampleRecords = 4096;
  static constexpr uint64_t kSampleBytes = 8u << 20;

  struct Held {  // a sampled record, until the slot size is known
    uint32_t db;
    uint32_t key_len;
    int64_t expire_at_ms;
    std::string data;  // key then payload
  };

  // Writes one record: `write(dst)` fills key_len + payload_len bytes.
  template <typename Write>
  void place(uint32_t db, uint64_t key_len, uint64_t payload_len, int64_t expire_at_ms,
             Write&& write);
  template <typename Write>
  void append(uint32_t db, uint64_t key_len, uint64_t payload_len, int64_t expire_at_ms,
              Write&& write);
  // Counts what the record about to be added holds that a conversion to an
  // older server would lose (the header's lossy records).
  void note_losses(uint8_t type, std::string_view value, uint16_t rdb_version);
  void choose_slot_size();
  std::byte* grow(PageBuffer& region, uint64_t& used, uint64_t bytes);
  void reset();

  SourceInfo source_;
  table::Scripts scripts_;
  std::vector<Held> sample_;
  uint64_t sample_bytes_ = 0;
  uint32_t slot_size_ = 0;  // 0 until chosen
  PageBuffer slots_, heap_;
  uint64_t slots_used_ = 0, heap_used_ = 0;
  uint64_t records_ = 0, heap_records_ = 0, data_bytes_ = 0;
  std::vector<table::DbEntry> dbs_;
  uint16_t rdb_version_ = 0;
  uint64_t empty_skipped_ = 0;  // empty collections left out (add_rdb_value)
  uint64_t keys_lost_ = 0;      // keys the source could not copy (count_lost_key)
  std::array<table::LossyRecords, table::kLossKinds> lossy_{};
  Status error_;  // sticky: memory could not grow, or the DB order broke
  table::SlotSizeChoice choice_;
};

}  // namespace rrs
