#include "server/table_builder.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "common/base/clock.h"
#include "proto/crc32c.h"
#include "proto/dump_payload.h"
#include "proto/rdb_convert.h"
#include "proto/rdb_value.h"

namespace rrs {
namespace {

constexpr uint64_t kPage = table::kRegionAlign;
constexpr uint64_t kFirstRegionBytes = 2u << 20;

uint64_t page_up(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

// A streamed table's room for its DB directory, at the end of the heap's
// room: enough for the most DBs a table may have (address space only).
constexpr uint64_t kDbdirRoom = uint64_t{table::kMaxDbCount} * table::kDbEntrySize + kPage;

static_assert(rdb::kLossKindCount <= table::kLossKinds);

}  // namespace

void TableBuilder::add(uint32_t db, std::string_view key, std::string_view payload,
                       int64_t expire_at_ms) {
  if (auto version = dump::rdb_version(payload); version && payload.size() > dump::kTrailerSize)
    note_losses(static_cast<uint8_t>(payload[0]),
                payload.substr(1, payload.size() - 1 - dump::kTrailerSize), *version);
  append(db, key.size(), payload.size(), expire_at_ms, [&](char* dst) {
    std::memcpy(dst, key.data(), key.size());
    std::memcpy(dst + key.size(), payload.data(), payload.size());
  });
}

void TableBuilder::add_rdb_value(uint32_t db, std::string_view key, uint8_t type,
                                 std::string_view value, uint16_t rdb_version,
                                 int64_t expire_at_ms) {
  // Servers drop these when they load them; RESTORE would refuse them.
  if (rdb::is_empty_collection(type, value, rdb_version)) {
    ++empty_skipped_;
    return;
  }
  note_losses(type, value, rdb_version);
  append(db, key.size(), dump::payload_size(value.size()), expire_at_ms, [&](char* dst) {
    std::memcpy(dst, key.data(), key.size());
    dump::write_payload(type, value, rdb_version, dst + key.size());
  });
}

void TableBuilder::note_losses(uint8_t type, std::string_view value, uint16_t rdb_version) {
  const uint32_t lost = rdb::losses_at_oldest(type, value, rdb_version);
  for (size_t i = 0; i < rdb::kLossKindCount; ++i) {
    if ((lost & (1u << i)) == 0) continue;
    if (lossy_[i].count++ == 0) lossy_[i].first_slot = record_count();
  }
}

void TableBuilder::set_function_payload(std::string payload, uint32_t libraries) {
  scripts_.function_payload = std::move(payload);
  scripts_.function_libraries = scripts_.function_payload.empty() ? 0 : libraries;
}

void TableBuilder::add_lua_script(std::string body) {
  scripts_.lua_scripts.push_back(std::move(body));
}

template <typename Write>
void TableBuilder::append(uint32_t db, uint64_t key_len, uint64_t payload_len, int64_t expire_at_ms,
                          Write&& write) {
  data_bytes_ += key_len + payload_len;
  if (slot_size_ != 0) return place(db, key_len, payload_len, expire_at_ms, write);
  Held& held = sample_.emplace_back(Held{db, static_cast<uint32_t>(key_len), expire_at_ms, {}});
  held.data.resize(key_len + payload_len);
  write(held.data.data());
  sample_bytes_ += held.data.size();
  if (sample_.size() >= kSampleRecords || sample_bytes_ >= kSampleBytes) choose_slot_size();
}

void TableBuilder::choose_slot_size() {
  std::vector<uint64_t> sizes;
  for (const Held& h : sample_) sizes.push_back(h.data.size());
  slot_size_ = sample_.empty() ? table::kMinSlotSize : table::choose_slot_size(sizes).slot_size;
  if (plan_) open_streamed();
  std::vector<Held> held = std::move(sample_);
  sample_.clear();
  for (const Held& h : held)
    place(h.db, h.key_len, h.data.size() - h.key_len, h.expire_at_ms,
          // Binary key + DUMP payload bytes, not a C string.
          // NOLINTNEXTLINE(bugprone-not-null-terminated-result)
          [&](char* dst) { std::memcpy(dst, h.data.data(), h.data.size()); });
}

std::byte* TableBuilder::grow(PageBuffer& region, uint64_t& used, uint64_t bytes) {
  if (used + bytes > region.size()) {
    uint64_t want = std::max<uint64_t>(
        {kFirstRegionBytes, region.size() * 2, page_up(used + bytes)});
    if (Status s = region.resize(want); !s.ok()) {
      if (error_.ok()) error_ = s;
      return nullptr;
    }
  }
  std::byte* at = region.data() + used;
  used += bytes;
  return at;
}

template <typename Write>
void TableBuilder::place(uint32_t db, uint64_t key_len, uint64_t payload_len, int64_t expire_at_ms,
                         Write&& write) {
  if (!error_.ok()) return;
  if (!dbs_.empty() && db < dbs_.back().db) {
    error_ = Status::error("build table", "records of DB " + std::to_string(db) +
                                              " came after DB " + std::to_string(dbs_.back().db) +
                                              " (the builder needs them grouped in DB order)");
    return;
  }
  if (dbs_.empty() || dbs_.back().db != db) dbs_.push_back({db, records_, 0, 0});
  dbs_.back().key_count++;
  if (expire_at_ms != table::kNoExpiry) dbs_.back().expires_count++;

  std::byte* slot = open_ ? next_slot() : grow(slots_, slots_used_, slot_size_);
  if (!slot) return;
  const bool in_slot = table::fits_inline(slot_size_, key_len, payload_len);
  const uint64_t heap_ref = heap_used_;
  const uint64_t footprint = table::heap_footprint(key_len, payload_len);
  std::byte* data = in_slot ? slot + table::kSlotHeaderSize
                    : open_ ? next_heap(footprint)
                            : grow(heap_, heap_used_, footprint);
  if (!data) return;
  write(reinterpret_cast<char*>(data));
  const char* d = reinterpret_cast<const char*>(data);
  table::RecordIn r{db, {d, key_len}, {d + key_len, payload_len}, expire_at_ms};
  std::span<std::byte> slot_bytes(slot, slot_size_);
  if (in_slot) {
    table::encode_inline_slot(r, slot_bytes);  // key and payload are already in place
  } else {
    table::encode_heap_slot(r, heap_ref, slot_bytes);
    heap_records_++;
  }
  if (rdb_version_ == 0) rdb_version_ = dump::rdb_version(r.payload).value_or(0);
  records_++;
  if (open_ && (records_ - progress_records_ >= kProgressRecords ||
                heap_used_ - progress_heap_ >= kProgressHeapBytes))
    publish_progress();
}

std::byte* TableBuilder::next_slot() {
  if (records_ >= open_header_.slot_capacity) {
    out_of_room_ = true;
    error_ = Status::error("build table", "more keys than the " +
                                              std::to_string(open_header_.slot_capacity) +
                                              " slots reserved for them")
                 .as(ErrorKind::kUnavailable);
    return nullptr;
  }
  slots_used_ += slot_size_;
  return open_->bytes.data() + open_header_.slot_offset(records_);
}

std::byte* TableBuilder::next_heap(uint64_t bytes) {
  if (bytes > open_header_.heap_capacity - kDbdirRoom - heap_used_) {
    out_of_room_ = true;
    error_ = Status::error("build table",
                           "more heap bytes than the " +
                               std::to_string((open_header_.heap_capacity - kDbdirRoom) >> 20) +
                               " MiB reserved for them")
                 .as(ErrorKind::kUnavailable);
    return nullptr;
  }
  std::byte* at = open_->bytes.data() + open_header_.heap_offset + heap_used_;
  heap_used_ += bytes;
  return at;
}

void TableBuilder::reset() {
  table::SlotSizeChoice choice = choice_;  // still reported by slot_choice()
  *this = TableBuilder();
  choice_ = choice;
}

Status TableBuilder::check_scripts(uint64_t scripts_bytes) const {
  if (!scripts_.function_payload.empty() &&
      (scripts_.function_libraries == 0 ||
       scripts_.function_payload.size() < table::kMinFunctionPayloadLen))
    return Status::error(
        "build table", "a function payload of " + std::to_string(scripts_.function_payload.size()) +
                           " bytes with " + std::to_string(scripts_.function_libraries) +
                           " libraries is not a FUNCTION DUMP reply");
  if (scripts_bytes > table::kMaxScriptsSize)
    return Status::error("build table", "functions and scripts take " +
                                            std::to_string(scripts_bytes) +
                                            " bytes, more than the table allows (" +
                                            std::to_string(table::kMaxScriptsSize) + ")");
  return {};
}

void TableBuilder::fill_header(table::Header& h, uint64_t epoch) const {
  h.epoch = epoch;
  h.created_unix_ms = static_cast<uint64_t>(unix_ms());
  h.engine = source_.server.engine;
  h.server_version = source_.server.number().substr(0, table::hdr::kServerVersionLen);
  h.module_aux_count = source_.module_aux;
  h.empty_skipped = empty_skipped_;
  h.keys_lost = keys_lost_;
  h.lossy = lossy_;
  h.source_kind = source_.kind;
  h.source_offset = source_.replication_offset;
  h.source_replid = source_.replid.substr(0, table::hdr::kReplidLen);
  h.source_stream_db = source_.stream_db;
  h.slot_size = slot_size_;
  // What the type numbers mean: the RDB header's version says it for an RDB
  // (even one without keys); a scan has only its payloads to go by, or, with
  // none, the version the server writes.
  h.rdb_version = source_.rdb_version;
  if (h.rdb_version == 0) h.rdb_version = rdb_version_;
  if (h.rdb_version == 0 && !sample_.empty())
    h.rdb_version = dump::rdb_version(
                        std::string_view(sample_.front().data).substr(sample_.front().key_len))
                        .value_or(0);
  if (h.rdb_version == 0 && !scripts_.function_payload.empty())
    h.rdb_version = dump::rdb_version(scripts_.function_payload).value_or(0);
  if (h.rdb_version == 0) h.rdb_version = source_.server.newest_rdb();
}

void TableBuilder::open_streamed() {
  const uint64_t scripts_bytes = table::scripts_region_size(scripts_);
  if (Status s = check_scripts(scripts_bytes); !s.ok()) {
    error_ = s;
    return;
  }
  table::Header h;
  fill_header(h, plan_->epoch);
  h.state = table::State::kBuilding;
  // Room for every key the source announced, and then some: keys written
  // between INFO and the fork, an RDB's later DBs (RESIZEDB comes per DB).
  // Room is address space: what is never written costs nothing.
  const uint64_t keys = std::max({plan_->keys_hint, expected_keys_, uint64_t{sample_.size()}});
  const uint64_t factor = std::max<uint32_t>(plan_->room_factor, 1);
  const uint64_t slots = (keys + keys / 8 + 65536) * factor;
  const uint64_t heap = (std::max(plan_->bytes_hint, data_bytes_) * 2 + (256u << 20)) * factor;
  // The DB directory goes after the heap at the end, inside the room the
  // header publishes: the heap's room keeps space for the most DBs a table
  // may have (next_heap stops short of it).
  if (Status s = table::plan_streamed(h, scripts_bytes, slots, heap + kDbdirRoom); !s.ok()) {
    error_ = s;
    return;
  }
  auto room = PageBuffer::reserve(h.total_size);
  if (!room.ok()) {
    error_ = room.status();
    return;
  }
  auto t = std::make_shared<Table>();
  t->bytes = std::move(*room);
  if (scripts_bytes)
    h.scripts_crc32c = table::encode_scripts(scripts_,
                                             {t->bytes.data() + h.scripts_offset, h.scripts_size});
  t->header = h;
  open_ = t;
  open_header_ = h;
  write_header(h);
  plan_->on_open(open_);
}

void TableBuilder::write_header(const table::Header& h) {
  std::array<std::byte, table::kHeaderSize> bytes{};
  table::encode_header(h, bytes);
  // Records before the header that counts them: a reader that sees the
  // header sees them (it trusts only a copy whose CRC verifies).
  std::atomic_thread_fence(std::memory_order_release);
  open_->written.store(h.state == table::State::kReady ? h.total_size : h.heap_offset + h.heap_size,
                       std::memory_order_release);
  std::memcpy(open_->bytes.data(), bytes.data(), bytes.size());
}

void TableBuilder::publish_progress() {
  table::Header& h = open_header_;
  h.record_count = h.slot_count = records_;
  h.slots_size = records_ * slot_size_;
  h.heap_size = heap_used_;
  h.lossy = lossy_;
  h.empty_skipped = empty_skipped_;
  h.keys_lost = keys_lost_;
  write_header(h);
  progress_records_ = records_;
  progress_heap_ = heap_used_;
}

std::shared_ptr<Table> TableBuilder::abandon(const std::string& why) {
  std::shared_ptr<Table> broken = open_;
  if (open_) {
    publish_progress();
    open_header_.state = table::State::kBroken;
    std::string reason = why.substr(0, table::hdr::kBrokenReasonLen);
    for (char& c : reason)
      if (c < 0x20 || c > 0x7e) c = '?';
    open_header_.broken_reason = reason.empty() ? "broken" : reason;
    write_header(open_header_);
  }
  reset();
  return broken;
}

Result<std::shared_ptr<Table>> TableBuilder::complete_streamed() {
  // Functions and scripts went into the table when it opened: an RDB that
  // carries more after its first key cannot be streamed.
  if (error_.ok() && table::scripts_region_size(scripts_) != open_header_.scripts_size)
    error_ = Status::error("build table", "functions or scripts came after the first key")
                 .as(ErrorKind::kBadData);
  if (!error_.ok()) {
    Status failed = error_;
    abandon(failed.message());
    return failed;
  }
  table::Header h = open_header_;
  fill_header(h, open_header_.epoch);
  h.created_unix_ms = open_header_.created_unix_ms;
  h.scripts_crc32c = open_header_.scripts_crc32c;
  h.record_count = records_;
  h.heap_size = heap_used_;
  h.db_count = static_cast<uint32_t>(dbs_.size());
  table::plan_completion(h);
  std::byte* base = open_->bytes.data();
  if (h.total_size > open_header_.total_size) {  // next_heap keeps its room free
    const Status s = Status::error("build table", "the DB directory does not fit the table's room");
    abandon(s.message());
    return s;
  }
  for (size_t i = 0; i < dbs_.size(); ++i)
    table::encode_db_entry(dbs_[i], std::span<std::byte, table::kDbEntrySize>(
                                        base + h.dbdir_offset + i * table::kDbEntrySize,
                                        table::kDbEntrySize));
  h.dbdir_crc32c = crc32c(0, base + h.dbdir_offset, h.dbdir_size);
  h.state = table::State::kReady;
  open_->completed_header = h;
  write_header(h);
  open_->completed_size.store(h.total_size, std::memory_order_release);
  choice_ = {slot_size_, records_ - heap_records_, heap_records_, heap_used_,
             slots_used_ + heap_used_};
  std::shared_ptr<Table> t = open_;
  reset();
  return t;
}

Result<std::shared_ptr<Table>> TableBuilder::build(uint64_t epoch) {
  const uint64_t scripts_bytes = table::scripts_region_size(scripts_);
  RRS_RETURN_IF_ERROR(check_scripts(scripts_bytes));
  if (slot_size_ == 0) choose_slot_size();
  if (open_) return complete_streamed();
  RRS_RETURN_IF_ERROR(error_);

  auto t = std::make_shared<Table>();
  table::Header& h = t->header;
  fill_header(h, epoch);
  h.db_count = static_cast<uint32_t>(dbs_.size());
  h.record_count = records_;
  RRS_RETURN_IF_ERROR(table::plan_geometry(h, heap_used_, scripts_bytes));
  auto mem = PageBuffer::allocate(h.total_size);
  if (!mem.ok()) return mem.status();
  t->bytes = std::move(*mem);

  // Slots and heap were written while the records arrived: their pages move
  // into place. Bytes past what was written are fresh (zero) pages.
  RRS_RETURN_IF_ERROR(slots_.resize(page_up(slots_used_)));
  RRS_RETURN_IF_ERROR(slots_.move_into(t->bytes, h.slots_offset));
  RRS_RETURN_IF_ERROR(heap_.resize(page_up(heap_used_)));
  RRS_RETURN_IF_ERROR(heap_.move_into(t->bytes, h.heap_offset));

  std::byte* base = t->bytes.data();
  for (size_t i = 0; i < dbs_.size(); ++i)
    table::encode_db_entry(dbs_[i], std::span<std::byte, table::kDbEntrySize>(
                                        base + h.dbdir_offset + i * table::kDbEntrySize,
                                        table::kDbEntrySize));
  h.dbdir_crc32c = crc32c(0, base + h.dbdir_offset, h.dbdir_size);
  if (scripts_bytes)
    h.scripts_crc32c = table::encode_scripts(scripts_, {base + h.scripts_offset, h.scripts_size});

  choice_ = {slot_size_, records_ - heap_records_, heap_records_, heap_used_,
             slots_used_ + heap_used_};
  h.state = table::State::kReady;
  table::encode_header(h, std::span<std::byte, table::kHeaderSize>(base, table::kHeaderSize));
  reset();
  return t;
}

}  // namespace rrs
