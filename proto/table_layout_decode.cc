// Decoding and validating what a peer's table holds: the header, the DB
// directory, slots, heap records and the scripts region (table_layout.h).
// Every byte here comes from the network.
#include "proto/table_layout.h"

#include <algorithm>
#include <cstring>

#include "proto/byte_order.h"
#include "proto/crc32c.h"
#include "proto/rdb_format.h"
#include "proto/table_layout_internal.h"

namespace rrs::table {
namespace {

using detail::align_up;
using detail::slot_crc;
using wire::load_u16;
using wire::load_u32;
using wire::load_u64;

// [off, off+len) lies within [0, limit), without overflow.
bool within(uint64_t off, uint64_t len, uint64_t limit) {
  return off <= limit && len <= limit - off;
}

Status bad_header(const std::string& why) { return Status::error("validate table header", why); }

Status bad_scripts(const std::string& why) { return Status::error("validate scripts region", why); }

Status bad_record(uint64_t index, const std::string& why) {
  return Status::error("validate record " + std::to_string(index), why);
}

// The hash slots entry's bitmap (kHashSlotBitmapSize bytes) as ranges.
SlotRanges slots_from_bitmap(std::string_view bitmap) {
  SlotRanges out;
  for (uint32_t slot = 0; slot < kHashSlots;) {
    auto set = [&](uint32_t s) { return (static_cast<uint8_t>(bitmap[s / 8]) >> (s % 8)) & 1; };
    if (!set(slot)) {
      ++slot;
      continue;
    }
    uint32_t last = slot;
    while (last + 1 < kHashSlots && set(last + 1)) ++last;
    out.add({static_cast<uint16_t>(slot), static_cast<uint16_t>(last)});
    slot = last + 1;
  }
  return out;
}

bool all_zero(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

std::string_view as_chars(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace

namespace {

// The header as a whole: long enough, ours, a version we read, intact, and
// in a state we know.
Status check_header_frame(std::span<const std::byte> bytes) {
  if (bytes.size() < kHeaderSize)
    return bad_header("only " + std::to_string(bytes.size()) + " of " +
                      std::to_string(kHeaderSize) + " header bytes");
  const std::byte* p = bytes.data();
  if (std::memcmp(p + hdr::kMagic, kMagic, sizeof kMagic) != 0)
    return bad_header("bad magic: this is not a mapping table (wrong server or port?)");
  const uint16_t version = load_u16(p + hdr::kLayoutVersion);
  if (version != kLayoutVersion)
    return bad_header("layout version " + std::to_string(version) +
                      " is not supported; this client reads version " +
                      std::to_string(kLayoutVersion) + " (upgrade the older side)");
  if (load_u16(p + hdr::kHeaderSize) != kHeaderSize)
    return bad_header("header size " + std::to_string(load_u16(p + hdr::kHeaderSize)) +
                      ", expected " + std::to_string(kHeaderSize));
  uint32_t crc = load_u32(p + hdr::kHeaderCrc);
  if (crc != crc32c(0, p, hdr::kHeaderCrc)) return bad_header("header checksum mismatch");
  uint32_t state = load_u32(p + hdr::kState);
  if (state != static_cast<uint32_t>(State::kBuilding) &&
      state != static_cast<uint32_t>(State::kReady) &&
      state != static_cast<uint32_t>(State::kBroken))
    return bad_header("unknown state " + std::to_string(state));
  return {};
}

// Every field, as stored; checked after.
Header load_header_fields(const std::byte* p) {
  Header h;
  h.layout_version = load_u16(p + hdr::kLayoutVersion);
  h.state = static_cast<State>(load_u32(p + hdr::kState));
  h.epoch = load_u64(p + hdr::kEpoch);
  h.created_unix_ms = load_u64(p + hdr::kCreatedMs);
  h.server_version = wire::load_text(p + hdr::kServerVersion, hdr::kServerVersionLen);
  h.engine = static_cast<Engine>(p[hdr::kEngine]);
  h.module_aux_count = load_u32(p + hdr::kModuleAux);
  h.empty_skipped = load_u64(p + hdr::kEmptySkipped);
  h.keys_lost = load_u64(p + hdr::kKeysLost);
  h.rdb_version = load_u32(p + hdr::kRdbVersion);
  h.db_count = load_u32(p + hdr::kDbCount);
  h.record_count = load_u64(p + hdr::kRecordCount);
  h.total_size = load_u64(p + hdr::kTotalSize);
  h.slot_size = load_u32(p + hdr::kSlotSize);
  h.slot_count = load_u64(p + hdr::kSlotCount);
  h.dbdir_offset = load_u64(p + hdr::kDbdirOffset);
  h.dbdir_size = load_u64(p + hdr::kDbdirSize);
  h.slots_offset = load_u64(p + hdr::kSlotsOffset);
  h.slots_size = load_u64(p + hdr::kSlotsSize);
  h.heap_offset = load_u64(p + hdr::kHeapOffset);
  h.heap_size = load_u64(p + hdr::kHeapSize);
  h.source_offset = load_u64(p + hdr::kSourceOffset);
  h.source_replid = wire::load_text(p + hdr::kSourceReplid, hdr::kReplidLen);
  h.dbdir_crc32c = load_u32(p + hdr::kDbdirCrc);
  h.scripts_offset = load_u64(p + hdr::kScriptsOffset);
  h.scripts_size = load_u64(p + hdr::kScriptsSize);
  h.scripts_crc32c = load_u32(p + hdr::kScriptsCrc);
  h.source_kind = static_cast<SourceKind>(load_u32(p + hdr::kSourceKind));
  h.source_stream_db = load_u32(p + hdr::kStreamDb);
  for (size_t i = 0; i < kLossKinds; ++i) {
    const std::byte* e = p + hdr::kLossy + i * hdr::kLossyEntrySize;
    h.lossy[i] = {load_u64(e), load_u64(e + 8)};
  }
  h.slot_capacity = load_u64(p + hdr::kSlotCapacity);
  h.heap_capacity = load_u64(p + hdr::kHeapCapacity);
  h.broken_reason = wire::load_text(p + hdr::kBrokenReason, hdr::kBrokenReasonLen);
  return h;
}

// The fields against each other and the published region: sizes, counts and
// regions in order, inside the table.
Status check_header_fields(const Header& h, const std::byte* p, uint64_t region_len) {
  if (h.source_kind != SourceKind::kScan && h.source_kind != SourceKind::kPsync &&
      h.source_kind != SourceKind::kRdbFile)
    return bad_header("unknown source kind " +
                      std::to_string(static_cast<uint32_t>(h.source_kind)));
  if (h.source_stream_db != 0 && (h.source_replid.empty() || h.source_stream_db >= kMaxDbCount))
    return bad_header("stream DB " + std::to_string(h.source_stream_db) +
                      (h.source_replid.empty() ? " without a replication ID" : " is out of range"));
  if (!wire::is_printable(h.server_version) || !wire::is_printable(h.source_replid))
    return bad_header("version or replid field is not printable ASCII");
  if (h.engine != Engine::kUnknown && h.engine != Engine::kRedis && h.engine != Engine::kValkey)
    return bad_header("unknown engine " + std::to_string(static_cast<int>(h.engine)));
  if (h.rdb_version != 0 && !rdb::is_known_version(static_cast<uint16_t>(h.rdb_version)))
    return bad_header("RDB version " + std::to_string(h.rdb_version) +
                      " is not one this client reads (upgrade it)");
  if (!all_zero(p + hdr::kReserved2, hdr::kReserved2Len) ||
      !all_zero(p + hdr::kEngine + 1, hdr::kModuleAux - hdr::kEngine - 1))
    return bad_header("reserved bytes are not zero");
  if (load_u32(p + hdr::kSlotHeaderSize) != kSlotHeaderSize)
    return bad_header("slot header size " + std::to_string(load_u32(p + hdr::kSlotHeaderSize)) +
                      ", expected 48");
  if (h.total_size > region_len)
    return bad_header("table claims " + std::to_string(h.total_size) +
                      " bytes but the published region is " + std::to_string(region_len));
  if (h.slot_size < kMinSlotSize || h.slot_size > kMaxSlotSize || h.slot_size % kSlotAlign)
    return bad_header("slot size " + std::to_string(h.slot_size) +
                      " is not a multiple of 64 in [64, 65536]");
  if (h.slot_count != h.record_count)
    return bad_header("slot count " + std::to_string(h.slot_count) + " != record count " +
                      std::to_string(h.record_count));
  for (const LossyRecords& l : h.lossy)
    if (l.count > h.record_count ||
        (l.count == 0 ? l.first_slot != 0 : l.first_slot >= h.record_count))
      return bad_header("lossy-records entry (" + std::to_string(l.count) + " records from slot " +
                        std::to_string(l.first_slot) + ") does not fit " +
                        std::to_string(h.record_count) + " records");
  const bool ready = h.state == State::kReady;
  if (!wire::is_printable(h.broken_reason) ||
      (h.state == State::kBroken) == h.broken_reason.empty())
    return bad_header(h.state == State::kBroken ? "broken, without a printable reason"
                                                : "a broken reason, but the table is not broken");
  if (h.db_count > kMaxDbCount || (ready && h.record_count > 0 && h.db_count == 0))
    return bad_header("implausible DB count " + std::to_string(h.db_count));
  // Until ready there is no DB directory.
  if (!ready &&
      (h.db_count != 0 || h.dbdir_offset != 0 || h.dbdir_size != 0 || h.dbdir_crc32c != 0))
    return bad_header("a DB directory in a table that is not ready");
  if (h.dbdir_size != uint64_t{h.db_count} * kDbEntrySize)
    return bad_header("DB directory size does not match its count");
  if (h.slot_capacity > h.total_size / h.slot_size || h.slot_count > h.slot_capacity ||
      h.slots_size != h.slot_count * h.slot_size)
    return bad_header("slot region size does not match slot count x slot size, or its room");
  if (h.scripts_size == 0 && (h.scripts_offset != 0 || h.scripts_crc32c != 0))
    return bad_header("no scripts region, but a scripts offset or checksum");
  if (h.scripts_size > kMaxScriptsSize)
    return bad_header("scripts region of " + std::to_string(h.scripts_size) +
                      " bytes is larger than the limit of " + std::to_string(kMaxScriptsSize));
  if (h.scripts_size != 0 && (h.scripts_offset != kRegionAlign || h.scripts_size % kScriptAlign))
    return bad_header("scripts region does not start at 4096 or is not a multiple of 8 bytes");
  // Header page, scripts, the slots' room, the heap's room, then (ready) the
  // DB directory, in that order and inside the table.
  const uint64_t heap_end = ready ? h.dbdir_offset : h.total_size;
  if (h.slots_offset < kRegionAlign || !within(h.scripts_offset, h.scripts_size, h.slots_offset) ||
      !within(h.slots_offset, h.slot_capacity * h.slot_size, h.heap_offset) ||
      h.heap_size > h.heap_capacity || !within(h.heap_offset, h.heap_capacity, heap_end) ||
      !within(h.dbdir_offset, h.dbdir_size, h.total_size))
    return bad_header("regions are out of order, overlap or run past the end of the table");
  return {};
}

}  // namespace

Result<Header> decode_header(std::span<const std::byte> bytes, uint64_t region_len) {
  RRS_RETURN_IF_ERROR(check_header_frame(bytes));
  Header h = load_header_fields(bytes.data());
  RRS_RETURN_IF_ERROR(check_header_fields(h, bytes.data(), region_len));
  return h;
}

Result<std::vector<DbEntry>> decode_db_directory(const Header& h,
                                                 std::span<const std::byte> bytes) {
  if (bytes.size() != h.dbdir_size)
    return Status::error("validate DB directory", "size " + std::to_string(bytes.size()) +
                                                      " != " + std::to_string(h.dbdir_size));
  if (crc32c(0, bytes.data(), bytes.size()) != h.dbdir_crc32c)
    return Status::error("validate DB directory", "checksum mismatch");
  std::vector<DbEntry> dbs(h.db_count);
  uint64_t next_slot = 0;
  for (size_t i = 0; i < dbs.size(); ++i) {
    const std::byte* p = bytes.data() + i * kDbEntrySize;
    DbEntry& e = dbs[i];
    e.db = load_u32(p);
    e.first_slot = load_u64(p + 8);
    e.key_count = load_u64(p + 16);
    e.expires_count = load_u64(p + 24);
    auto why = [&](const std::string& w) {
      return Status::error("validate DB directory entry " + std::to_string(i), w);
    };
    if (load_u32(p + 4) != 0) return why("reserved bytes are not zero");
    if (i > 0 && e.db <= dbs[i - 1].db) return why("DB numbers are not strictly increasing");
    if (e.key_count == 0) return why("empty DB listed");
    if (e.first_slot != next_slot) return why("DB slot ranges are not contiguous");
    if (e.key_count > h.slot_count - next_slot) return why("DB slot range runs past the end");
    if (e.expires_count > e.key_count) return why("more expiring keys than keys");
    next_slot += e.key_count;
  }
  if (next_slot != h.record_count)
    return Status::error("validate DB directory", "DBs hold " + std::to_string(next_slot) +
                                                      " keys, header says " +
                                                      std::to_string(h.record_count));
  return dbs;
}

Result<SlotView> decode_slot(const Header& h, uint64_t index, uint32_t expected_db,
                             std::span<const std::byte> bytes) {
  if (bytes.size() != h.slot_size)
    return bad_record(index, "got " + std::to_string(bytes.size()) + " bytes, slot size is " +
                                 std::to_string(h.slot_size));
  const std::byte* p = bytes.data();
  SlotView v;
  v.crc32c = load_u32(p + slot::kCrc);
  uint8_t kind = static_cast<uint8_t>(p[slot::kKind]);
  if (kind != static_cast<uint8_t>(SlotKind::kInline) &&
      kind != static_cast<uint8_t>(SlotKind::kHeap))
    return bad_record(index, "unknown slot kind " + std::to_string(kind));
  v.kind = static_cast<SlotKind>(kind);
  v.db = load_u32(p + slot::kDb);
  v.key_len = load_u32(p + slot::kKeyLen);
  v.payload_len = load_u64(p + slot::kPayloadLen);
  v.expire_at_ms = wire::load_i64(p + slot::kExpireAt);
  v.heap_ref = load_u64(p + slot::kHeapRef);
  if (!all_zero(p + 5, 3) || !all_zero(p + slot::kReserved, 8))
    return bad_record(index, "reserved bytes are not zero");
  if (v.db != expected_db)
    return bad_record(index, "DB " + std::to_string(v.db) + " but the directory puts it in DB " +
                                 std::to_string(expected_db));
  if (v.key_len > kMaxKeyLen) return bad_record(index, "key longer than 512 MiB");
  if (v.payload_len < kMinPayloadLen)
    return bad_record(index, "payload of " + std::to_string(v.payload_len) +
                                 " bytes is shorter than any DUMP payload");
  if (v.expire_at_ms < kNoExpiry) return bad_record(index, "negative expiry time");
  if (v.kind == SlotKind::kInline) {
    if (v.heap_ref != 0) return bad_record(index, "inline record with a heap reference");
    if (!fits_inline(h.slot_size, v.key_len, v.payload_len))
      return bad_record(index, "inline key and payload overrun the slot");
    auto data = as_chars(bytes.subspan(kSlotHeaderSize));
    v.key = data.substr(0, v.key_len);
    v.payload = data.substr(v.key_len, v.payload_len);
    if (slot_crc(bytes, v.key, v.payload) != v.crc32c)
      return bad_record(index, "checksum mismatch");
    return v;
  }
  // A peer's heap (and region) can claim nearly 2^64 bytes: key_len +
  // payload_len is summed only once it is known not to wrap.
  if (v.heap_ref % kHeapAlign != 0 || v.payload_len > h.heap_size ||
      v.key_len > h.heap_size - v.payload_len ||
      !within(v.heap_ref, v.key_len + v.payload_len, h.heap_size))
    return bad_record(index, "heap reference " + std::to_string(v.heap_ref) + " (key of " +
                                 std::to_string(v.key_len) + " bytes, payload of " +
                                 std::to_string(v.payload_len) + ") lies outside the heap of " +
                                 std::to_string(h.heap_size) + " bytes");
  return v;
}

Status verify_heap_record(uint64_t index, std::span<const std::byte> slot_bytes, SlotView& v,
                          std::span<const std::byte> heap_bytes) {
  // Exactly key_len + payload_len bytes, checked without summing them: `v`
  // may come from a slot no one validated.
  if (v.payload_len > heap_bytes.size() || v.key_len != heap_bytes.size() - v.payload_len)
    return bad_record(index, "heap bytes have the wrong length");
  auto data = as_chars(heap_bytes);
  std::string_view key = data.substr(0, v.key_len);
  std::string_view payload = data.substr(v.key_len);
  if (slot_crc(slot_bytes, key, payload) != v.crc32c)
    return bad_record(index, "checksum mismatch (heap record)");
  v.key = key;
  v.payload = payload;
  return {};
}

Result<Scripts> decode_scripts(const Header& h, std::span<const std::byte> bytes) {
  if (bytes.size() != h.scripts_size)
    return bad_scripts("size " + std::to_string(bytes.size()) +
                       " != " + std::to_string(h.scripts_size));
  if (crc32c(0, bytes.data(), bytes.size()) != h.scripts_crc32c)
    return bad_scripts("checksum mismatch");
  Scripts s;
  bool have_functions = false;
  uint64_t off = 0;
  while (off < bytes.size()) {
    auto why = [&](const std::string& w) {
      return bad_scripts("entry at offset " + std::to_string(off) + ": " + w);
    };
    const uint64_t left = bytes.size() - off;
    if (left < kScriptEntryHeaderSize)
      return why("truncated: " + std::to_string(left) + " bytes left, an entry header is 16");
    const std::byte* p = bytes.data() + off;
    const uint8_t kind = static_cast<uint8_t>(p[script::kKind]);
    const uint32_t count = load_u32(p + script::kCount);
    const uint64_t len = load_u64(p + script::kLen);
    if (!all_zero(p + script::kReserved, 3)) return why("reserved bytes are not zero");
    // Data and padding lie in the region (len is bounded first, so rounding it
    // up cannot overflow).
    const uint64_t room = left - kScriptEntryHeaderSize;
    if (len > room || align_up(len, kScriptAlign) > room)
      return why("length " + std::to_string(len) + " runs past the end of the region (" +
                 std::to_string(room) + " bytes left)");
    const uint64_t padded = align_up(len, kScriptAlign);
    const std::byte* data = p + kScriptEntryHeaderSize;
    if (!all_zero(data + len, padded - len)) return why("padding is not zero");
    std::string body(reinterpret_cast<const char*>(data), len);
    if (kind == static_cast<uint8_t>(ScriptKind::kFunctions)) {
      if (have_functions) return why("a second function entry (at most one is allowed)");
      if (count == 0 || count > len)
        return why("implausible library count " + std::to_string(count));
      if (len < kMinFunctionPayloadLen)
        return why("function payload of " + std::to_string(len) +
                   " bytes is shorter than any FUNCTION DUMP payload");
      have_functions = true;
      s.function_payload = std::move(body);
      s.function_libraries = count;
    } else if (kind == static_cast<uint8_t>(ScriptKind::kLua)) {
      if (count != 1) return why("Lua entry with count " + std::to_string(count) + ", expected 1");
      s.lua_scripts.push_back(std::move(body));
    } else if (kind == static_cast<uint8_t>(ScriptKind::kHashSlots)) {
      if (s.hash_slots) return why("a second hash slots entry (at most one is allowed)");
      if (len != kHashSlotBitmapSize)
        return why("hash slots entry of " + std::to_string(len) + " bytes, expected " +
                   std::to_string(kHashSlotBitmapSize));
      s.hash_slots = slots_from_bitmap(body);
      if (s.hash_slots->count() != count)
        return why("hash slots entry counts " + std::to_string(count) + " slots, its bitmap " +
                   std::to_string(s.hash_slots->count()));
    } else {
      return why("unknown kind " + std::to_string(kind));
    }
    off += kScriptEntryHeaderSize + padded;
  }
  return s;
}

}  // namespace rrs::table
