// Builds one epoch of the mapping table from records handed over by a
// snapshot source, in DB order, as they arrive. Each record is written once,
// straight to its final bytes: inline in its slot, or in the heap. The slot
// size depends on the records (proto/slot_size.h), so it is chosen from the
// first ones (a sample held back until then).
//
// Two ways to build. Privately (the default): slots and heap grow in
// mappings of their own; build() moves their pages into the table (no copy)
// and writes the header last, so the table is published complete. Streamed
// (stream(): --source psync): once the slot size is chosen the table is laid
// out in room reserved up front and handed over at once, and every record is
// written in its final place while readers read the ones before it; the
// header, rewritten as records complete, says how far it has got
// (proto/table_layout.h). build() then adds the DB directory and the final
// header; abandon() marks it broken.
#pragma once

#include <functional>
#include <memory>
#include <optional>
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

// How a streamed build reserves its room and hands its table over.
struct StreamPlan {
  uint64_t epoch = 0;
  // What the source said before its snapshot (INFO keyspace, INFO memory's
  // used_memory): the room is sized from these and the RDB's RESIZEDB
  // counts, with a margin, times `room_factor` (raised after a build that
  // ran out of room).
  uint64_t keys_hint = 0;
  uint64_t bytes_hint = 0;
  uint32_t room_factor = 1;
  // Called on the builder's thread once the table is laid out, before any
  // record is in it; it is complete when build() returns it.
  std::function<void(const std::shared_ptr<Table>&)> on_open;
};

class TableBuilder {
 public:
  // Builds the next table streamed (see above); call before the first record.
  void stream(StreamPlan plan) { plan_ = std::move(plan); }
  // The RDB's RESIZEDB: `keys` more records are coming for one DB.
  void expect_keys(uint64_t keys) { expected_keys_ += keys; }
  // Whether the streamed table is out (handed to on_open).
  bool opened() const { return open_ != nullptr; }
  // A streamed build that ran out of its room (more keys or bytes than its
  // plan reserved): taking the snapshot again with more room will do.
  bool out_of_room() const { return out_of_room_; }
  // A streamed build that cannot finish: its published table is marked
  // broken with `why` (readers stop) and returned (null: none was handed
  // over); the builder is empty again.
  std::shared_ptr<Table> abandon(const std::string& why);

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
  // A streamed table keeps the epoch of its plan, and is the one on_open got.
  Result<std::shared_ptr<Table>> build(uint64_t epoch);
  // How the last build chose its slot size.
  const table::SlotSizeChoice& slot_choice() const { return choice_; }

 private:
  // The sample the slot size is chosen from: this many records or bytes.
  static constexpr size_t kSampleRecords = 4096;
  static constexpr uint64_t kSampleBytes = 8u << 20;
  // A streamed table's header is rewritten after this many records, or
  // this many heap bytes, and at the end.
  static constexpr uint64_t kProgressRecords = 256;
  static constexpr uint64_t kProgressHeapBytes = 1u << 20;

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
  // Streamed: where the next slot / heap bytes go in the open table, or
  // null (out of room: the error is set).
  std::byte* next_slot();
  std::byte* next_heap(uint64_t bytes);
  // The header fields every table of this build shares (source, counts).
  void fill_header(table::Header& h, uint64_t epoch) const;
  // Streamed: lays the table out in its room and hands it over.
  void open_streamed();
  // Streamed: rewrites the table's header with what is complete now.
  void publish_progress();
  void write_header(const table::Header& h);
  Result<std::shared_ptr<Table>> complete_streamed();
  Status check_scripts(uint64_t scripts_bytes) const;
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
  // Streamed builds.
  std::optional<StreamPlan> plan_;
  uint64_t expected_keys_ = 0;
  std::shared_ptr<Table> open_;
  table::Header open_header_;  // the open table's header as last written
  uint64_t progress_records_ = 0, progress_heap_ = 0;
  bool out_of_room_ = false;
};

}  // namespace rrs
