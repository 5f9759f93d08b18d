#include "proto/table_layout.h"

#include <algorithm>
#include <cstring>

#include "proto/byte_order.h"
#include "proto/crc32c.h"
#include "proto/rdb_format.h"
#include "proto/table_layout_internal.h"

namespace rrs::table {

namespace detail {

uint32_t slot_crc(std::span<const std::byte> slot_header, std::string_view key,
                  std::string_view payload) {
  uint32_t c = crc32c(0, slot_header.data() + 4, kSlotHeaderSize - 4);
  c = crc32c(c, key.data(), key.size());
  return crc32c(c, payload.data(), payload.size());
}

}  // namespace detail

namespace {

using detail::align_up;
using detail::slot_crc;

void encode_slot_header(const RecordIn& r, SlotKind kind, uint64_t heap_ref,
                        std::span<std::byte> slot) {
  std::memset(slot.data(), 0, kSlotHeaderSize);
  slot[slot::kKind] = static_cast<std::byte>(kind);
  wire::store_u32(&slot[slot::kDb], r.db);
  wire::store_u32(&slot[slot::kKeyLen], static_cast<uint32_t>(r.key.size()));
  wire::store_u64(&slot[slot::kPayloadLen], r.payload.size());
  wire::store_i64(&slot[slot::kExpireAt], r.expire_at_ms);
  wire::store_u64(&slot[slot::kHeapRef], heap_ref);
  wire::store_u32(&slot[slot::kCrc], slot_crc(slot, r.key, r.payload));
}

uint64_t script_entry_size(uint64_t len) {
  return kScriptEntryHeaderSize + align_up(len, kScriptAlign);
}

std::byte* encode_script_entry(std::byte* p, ScriptKind kind, uint32_t count,
                               std::string_view data) {
  const uint64_t size = script_entry_size(data.size());
  std::memset(p, 0, size);
  p[script::kKind] = static_cast<std::byte>(kind);
  wire::store_u32(p + script::kCount, count);
  wire::store_u64(p + script::kLen, data.size());
  std::memcpy(p + kScriptEntryHeaderSize, data.data(), data.size());
  return p + size;
}

}  // namespace

const char* source_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kScan: return "scan";
    case SourceKind::kPsync: return "psync";
    case SourceKind::kRdbFile: return "rdb";
  }
  return "unknown";
}

bool fits_inline(uint32_t slot_size, uint64_t key_len, uint64_t payload_len) {
  return slot_size >= kSlotHeaderSize && key_len <= slot_size - kSlotHeaderSize &&
         payload_len <= slot_size - kSlotHeaderSize - key_len;
}

uint64_t heap_footprint(uint64_t key_len, uint64_t payload_len) {
  return align_up(key_len + payload_len, kHeapAlign);
}

namespace {

Status check_slot_size(uint32_t slot_size) {
  if (slot_size < kMinSlotSize || slot_size > kMaxSlotSize || slot_size % kSlotAlign)
    return Status::error("plan table", "slot size " + std::to_string(slot_size) +
                                           " is not a multiple of 64 in [64, 65536]");
  return {};
}

}  // namespace

Status plan_streamed(Header& h, uint64_t scripts_bytes, uint64_t slot_capacity,
                     uint64_t heap_capacity) {
  RRS_RETURN_IF_ERROR(check_slot_size(h.slot_size));
  // Room beyond any real table (a 47-bit address space) is a planning bug,
  // and would overflow the sums below.
  constexpr uint64_t kMaxRoom = 1ull << 47;
  if (scripts_bytes > kMaxScriptsSize || slot_capacity > kMaxRoom / h.slot_size ||
      heap_capacity > kMaxRoom)
    return Status::error("plan table", "room for " + std::to_string(slot_capacity) + " slots and " +
                                           std::to_string(heap_capacity) +
                                           " heap bytes is beyond any table");
  h.scripts_offset = scripts_bytes ? kRegionAlign : 0;
  h.scripts_size = scripts_bytes;
  h.slots_offset = align_up(kRegionAlign + scripts_bytes, kRegionAlign);
  h.slot_capacity = slot_capacity;
  h.heap_offset = align_up(h.slots_offset + slot_capacity * h.slot_size, kRegionAlign);
  h.heap_capacity = heap_capacity;
  h.total_size = align_up(h.heap_offset + heap_capacity, kRegionAlign);
  h.record_count = h.slot_count = h.slots_size = 0;
  h.heap_size = 0;
  h.db_count = 0;
  h.dbdir_offset = h.dbdir_size = 0;
  return {};
}

void plan_completion(Header& h) {
  h.slot_count = h.record_count;
  h.slots_size = h.slot_count * h.slot_size;
  h.heap_capacity = h.heap_size;
  h.dbdir_offset = align_up(h.heap_offset + h.heap_size, kRegionAlign);
  h.dbdir_size = uint64_t{h.db_count} * kDbEntrySize;
  h.total_size = align_up(h.dbdir_offset + h.dbdir_size, kRegionAlign);
}

Status plan_geometry(Header& h, uint64_t heap_bytes, uint64_t scripts_bytes) {
  const uint64_t records = h.record_count;
  const uint32_t dbs = h.db_count;
  RRS_RETURN_IF_ERROR(plan_streamed(h, scripts_bytes, records, heap_bytes));
  h.record_count = records;
  h.db_count = dbs;
  h.heap_size = heap_bytes;
  plan_completion(h);
  return {};
}

void encode_header(const Header& h, std::span<std::byte, kHeaderSize> out) {
  std::byte* p = out.data();
  std::memset(p, 0, kHeaderSize);
  std::memcpy(p + hdr::kMagic, kMagic, sizeof kMagic);
  wire::store_u16(p + hdr::kLayoutVersion, h.layout_version);
  wire::store_u16(p + hdr::kHeaderSize, static_cast<uint16_t>(kHeaderSize));
  wire::store_u32(p + hdr::kState, static_cast<uint32_t>(h.state));
  wire::store_u64(p + hdr::kEpoch, h.epoch);
  wire::store_u64(p + hdr::kCreatedMs, h.created_unix_ms);
  wire::store_text(p + hdr::kServerVersion, hdr::kServerVersionLen, h.server_version.data(),
                   h.server_version.size());
  p[hdr::kEngine] = static_cast<std::byte>(h.engine);
  wire::store_u32(p + hdr::kModuleAux, h.module_aux_count);
  wire::store_u64(p + hdr::kEmptySkipped, h.empty_skipped);
  wire::store_u64(p + hdr::kKeysLost, h.keys_lost);
  wire::store_u32(p + hdr::kRdbVersion, h.rdb_version);
  wire::store_u32(p + hdr::kDbCount, h.db_count);
  wire::store_u64(p + hdr::kRecordCount, h.record_count);
  wire::store_u64(p + hdr::kTotalSize, h.total_size);
  wire::store_u32(p + hdr::kSlotSize, h.slot_size);
  wire::store_u32(p + hdr::kSlotHeaderSize, static_cast<uint32_t>(kSlotHeaderSize));
  wire::store_u64(p + hdr::kSlotCount, h.slot_count);
  wire::store_u64(p + hdr::kDbdirOffset, h.dbdir_offset);
  wire::store_u64(p + hdr::kDbdirSize, h.dbdir_size);
  wire::store_u64(p + hdr::kSlotsOffset, h.slots_offset);
  wire::store_u64(p + hdr::kSlotsSize, h.slots_size);
  wire::store_u64(p + hdr::kHeapOffset, h.heap_offset);
  wire::store_u64(p + hdr::kHeapSize, h.heap_size);
  wire::store_u64(p + hdr::kSourceOffset, h.source_offset);
  wire::store_text(p + hdr::kSourceReplid, hdr::kReplidLen, h.source_replid.data(),
                   h.source_replid.size());
  wire::store_u32(p + hdr::kDbdirCrc, h.dbdir_crc32c);
  wire::store_u32(p + hdr::kSourceKind, static_cast<uint32_t>(h.source_kind));
  wire::store_u32(p + hdr::kStreamDb, h.source_stream_db);
  wire::store_u64(p + hdr::kScriptsOffset, h.scripts_offset);
  wire::store_u64(p + hdr::kScriptsSize, h.scripts_size);
  wire::store_u32(p + hdr::kScriptsCrc, h.scripts_crc32c);
  for (size_t i = 0; i < kLossKinds; ++i) {
    std::byte* e = p + hdr::kLossy + i * hdr::kLossyEntrySize;
    wire::store_u64(e, h.lossy[i].count);
    wire::store_u64(e + 8, h.lossy[i].first_slot);
  }
  wire::store_u64(p + hdr::kSlotCapacity, h.slot_capacity);
  wire::store_u64(p + hdr::kHeapCapacity, h.heap_capacity);
  wire::store_text(p + hdr::kBrokenReason, hdr::kBrokenReasonLen, h.broken_reason.data(),
                   std::min(h.broken_reason.size(), hdr::kBrokenReasonLen));
  wire::store_u32(p + hdr::kHeaderCrc, crc32c(0, p, hdr::kHeaderCrc));
}

void encode_db_entry(const DbEntry& e, std::span<std::byte, kDbEntrySize> out) {
  std::byte* p = out.data();
  std::memset(p, 0, kDbEntrySize);
  wire::store_u32(p + 0, e.db);
  wire::store_u64(p + 8, e.first_slot);
  wire::store_u64(p + 16, e.key_count);
  wire::store_u64(p + 24, e.expires_count);
}

void encode_inline_slot(const RecordIn& r, std::span<std::byte> slot) {
  encode_slot_header(r, SlotKind::kInline, 0, slot);
  // memmove: a builder may have written key and payload in place already.
  std::byte* data = slot.data() + kSlotHeaderSize;
  std::memmove(data, r.key.data(), r.key.size());
  std::memmove(data + r.key.size(), r.payload.data(), r.payload.size());
  size_t used = kSlotHeaderSize + r.key.size() + r.payload.size();
  std::memset(slot.data() + used, 0, slot.size() - used);
}

void encode_heap_slot(const RecordIn& r, uint64_t heap_ref, std::span<std::byte> slot) {
  encode_slot_header(r, SlotKind::kHeap, heap_ref, slot);
  std::memset(slot.data() + kSlotHeaderSize, 0, slot.size() - kSlotHeaderSize);
}

uint64_t scripts_region_size(const Scripts& s) {
  uint64_t n = s.function_payload.empty() ? 0 : script_entry_size(s.function_payload.size());
  for (const std::string& body : s.lua_scripts) n += script_entry_size(body.size());
  if (s.hash_slots) n += script_entry_size(kHashSlotBitmapSize);
  return n;
}

uint32_t encode_scripts(const Scripts& s, std::span<std::byte> out) {
  std::byte* p = out.data();
  if (!s.function_payload.empty())
    p = encode_script_entry(p, ScriptKind::kFunctions, s.function_libraries, s.function_payload);
  for (const std::string& body : s.lua_scripts)
    p = encode_script_entry(p, ScriptKind::kLua, 1, body);
  if (s.hash_slots) {
    std::string bitmap(kHashSlotBitmapSize, '\0');
    for (const SlotRange& r : s.hash_slots->ranges())
      for (uint32_t slot = r.first; slot <= r.last; ++slot)
        bitmap[slot / 8] = static_cast<char>(bitmap[slot / 8] | (1 << (slot % 8)));
    p = encode_script_entry(p, ScriptKind::kHashSlots, s.hash_slots->count(), bitmap);
  }
  return crc32c(0, out.data(), static_cast<size_t>(p - out.data()));
}

}  // namespace rrs::table
