#include "server/table_builder.h"

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "proto/crc32c.h"
#include "proto/dump_payload.h"

namespace rrs {

char* TableBuilder::reserve(size_t bytes) {
  if (bytes > block_left_) {
    size_t size = std::max(bytes, kArenaBlock);
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    block_next_ = blocks_.back().get();
    block_left_ = size;
  }
  char* p = block_next_;
  block_next_ += bytes;
  block_left_ -= bytes;
  return p;
}

void TableBuilder::add(uint32_t db, std::string_view key, std::string_view payload,
                       int64_t expire_at_ms) {
  char* p = reserve(key.size() + payload.size());
  std::memcpy(p, key.data(), key.size());
  std::memcpy(p + key.size(), payload.data(), payload.size());
  staged_.push_back({db, static_cast<uint32_t>(key.size()), payload.size(), expire_at_ms, p});
  staged_bytes_ += key.size() + payload.size();
}

void TableBuilder::set_function_payload(std::string payload, uint32_t libraries) {
  scripts_.function_payload = std::move(payload);
  scripts_.function_libraries = scripts_.function_payload.empty() ? 0 : libraries;
}

void TableBuilder::add_lua_script(std::string body) {
  scripts_.lua_scripts.push_back(std::move(body));
}

void TableBuilder::add_rdb_value(uint32_t db, std::string_view key, uint8_t type,
                                 std::string_view value, uint16_t rdb_version,
                                 int64_t expire_at_ms) {
  uint64_t payload_len = dump::payload_size(value.size());
  char* p = reserve(key.size() + payload_len);
  std::memcpy(p, key.data(), key.size());
  dump::write_payload(type, value, rdb_version, p + key.size());
  staged_.push_back({db, static_cast<uint32_t>(key.size()), payload_len, expire_at_ms, p});
  staged_bytes_ += key.size() + payload_len;
}

Result<std::shared_ptr<Table>> TableBuilder::build(uint64_t epoch) {
  if (!scripts_.function_payload.empty() &&
      (scripts_.function_libraries == 0 ||
       scripts_.function_payload.size() < table::kMinFunctionPayloadLen))
    return Status::error("build table", "a function payload of " +
                                            std::to_string(scripts_.function_payload.size()) +
                                            " bytes with " +
                                            std::to_string(scripts_.function_libraries) +
                                            " libraries is not a FUNCTION DUMP reply");
  const uint64_t scripts_bytes = table::scripts_region_size(scripts_);
  if (scripts_bytes > table::kMaxScriptsSize)
    return Status::error("build table", "functions and scripts take " +
                                            std::to_string(scripts_bytes) +
                                            " bytes, more than the table allows (" +
                                            std::to_string(table::kMaxScriptsSize) + ")");

  // Records of one DB must be contiguous (the directory gives each DB a range).
  std::stable_sort(staged_.begin(), staged_.end(),
                   [](const Staged& a, const Staged& b) { return a.db < b.db; });

  std::vector<uint64_t> sizes(staged_.size());
  for (size_t i = 0; i < staged_.size(); ++i) sizes[i] = staged_[i].key_len + staged_[i].payload_len;
  choice_ = table::choose_slot_size(sizes);
  if (staged_.empty()) choice_.slot_size = table::kMinSlotSize;

  std::vector<table::DbEntry> dbs;
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (dbs.empty() || dbs.back().db != staged_[i].db) dbs.push_back({staged_[i].db, i, 0, 0});
    dbs.back().key_count++;
    if (staged_[i].expire_at_ms != table::kNoExpiry) dbs.back().expires_count++;
  }

  auto t = std::make_shared<Table>();
  table::Header& h = t->header;
  h.epoch = epoch;
  h.created_unix_ms = static_cast<uint64_t>(unix_ms());
  h.redis_version = source_.redis_version.substr(0, table::hdr::kRedisVersionLen);
  h.source_kind = source_.kind;
  h.source_offset = source_.replication_offset;
  h.source_replid = source_.replid.substr(0, table::hdr::kReplidLen);
  h.db_count = static_cast<uint32_t>(dbs.size());
  h.record_count = staged_.size();
  h.slot_size = choice_.slot_size;
  if (!staged_.empty()) {
    const Staged& first = staged_.front();
    h.rdb_version = dump::rdb_version({first.data + first.key_len, first.payload_len}).value_or(0);
  } else if (!scripts_.function_payload.empty()) {
    // No keys: the function payload's trailer still tells a client which
    // Redis can take it.
    h.rdb_version = dump::rdb_version(scripts_.function_payload).value_or(0);
  }
  RRS_RETURN_IF_ERROR(table::plan_geometry(h, choice_.heap_bytes, scripts_bytes));
  auto mem = PageBuffer::allocate(h.total_size);
  if (!mem.ok()) return mem.status();
  t->bytes = std::move(*mem);
  std::byte* base = t->bytes.data();

  for (size_t i = 0; i < dbs.size(); ++i)
    table::encode_db_entry(
        dbs[i], std::span<std::byte, table::kDbEntrySize>(base + h.dbdir_offset + i * table::kDbEntrySize,
                                                          table::kDbEntrySize));
  h.dbdir_crc32c = crc32c(0, base + h.dbdir_offset, h.dbdir_size);

  uint64_t heap_ref = 0;
  for (uint64_t i = 0; i < staged_.size(); ++i) {
    const Staged& s = staged_[i];
    table::RecordIn r{s.db, {s.data, s.key_len}, {s.data + s.key_len, s.payload_len}, s.expire_at_ms};
    std::span<std::byte> slot(base + h.slot_offset(i), h.slot_size);
    if (table::fits_inline(h.slot_size, s.key_len, s.payload_len)) {
      table::encode_inline_slot(r, slot);
    } else {
      table::encode_heap_slot(r, heap_ref, slot);
      std::memcpy(base + h.heap_offset + heap_ref, s.data, s.key_len + s.payload_len);
      heap_ref += table::heap_footprint(s.key_len, s.payload_len);
    }
  }

  if (scripts_bytes)
    h.scripts_crc32c =
        table::encode_scripts(scripts_, {base + h.scripts_offset, h.scripts_size});

  h.state = table::State::kReady;
  table::encode_header(h, std::span<std::byte, table::kHeaderSize>(base, table::kHeaderSize));

  staged_.clear();
  staged_.shrink_to_fit();
  blocks_.clear();
  block_left_ = 0;
  staged_bytes_ = 0;
  scripts_ = {};
  return t;
}

}  // namespace rrs
