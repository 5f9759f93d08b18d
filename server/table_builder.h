// Builds one epoch of the mapping table from records handed over by a
// snapshot source. Records are staged in an arena first, because the slot size
// depends on all of them (proto/slot_size.h); then the table is written into
// one page-aligned allocation, header last, so it is never seen half-built.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/table.h"
#include "proto/slot_size.h"
#include "proto/table_layout.h"

namespace rrs {

struct SourceInfo {
  std::string redis_version;
  table::SourceKind kind = table::SourceKind::kScan;
  uint64_t replication_offset = 0;
  std::string replid;
};

class TableBuilder {
 public:
  void set_source(SourceInfo info) { source_ = std::move(info); }
  void add(uint32_t db, std::string_view key, std::string_view payload, int64_t expire_at_ms);
  // A record straight from an RDB: the DUMP payload is built in place from
  // the value's raw bytes (type, value, RDB version, CRC64).
  void add_rdb_value(uint32_t db, std::string_view key, uint8_t type, std::string_view value,
                     uint16_t rdb_version, int64_t expire_at_ms);
  // The master's Redis Functions: exactly what FUNCTION DUMP returned, holding
  // `libraries` libraries. Replaces an earlier payload; an empty one clears it.
  void set_function_payload(std::string payload, uint32_t libraries);
  // A Lua script body a pre-7.0 master shipped in its RDB, for SCRIPT LOAD.
  void add_lua_script(std::string body);

  uint64_t record_count() const { return staged_.size(); }
  uint64_t staged_bytes() const { return staged_bytes_; }

  // Lays out and writes the table; the staged records, functions and scripts
  // are released.
  Result<std::shared_ptr<Table>> build(uint64_t epoch);
  // How the last build chose its slot size.
  const table::SlotSizeChoice& slot_choice() const { return choice_; }

 private:
  struct Staged {
    uint32_t db;
    uint32_t key_len;
    uint64_t payload_len;
    int64_t expire_at_ms;
    const char* data;  // key then payload, in the arena
  };
  char* reserve(size_t bytes);

  static constexpr size_t kArenaBlock = 64u << 20;
  SourceInfo source_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_left_ = 0;
  char* block_next_ = nullptr;
  std::vector<Staged> staged_;
  table::Scripts scripts_;
  uint64_t staged_bytes_ = 0;
  table::SlotSizeChoice choice_;
};

}  // namespace rrs
