// libFuzzer target: the mapping-table decoders (proto/table_layout.h), which
// a client runs over bytes read from a remote table.
//
// Input: one flag byte, then (flag 16) the region length the descriptor
// claims, 8 bytes little-endian, then the table region's first bytes. Without
// flag 16 the region length is the length of those bytes. A peer chooses the
// region length freely (up to 2^64 - 1), and the header may claim a table that
// large: bytes past the input are what the fetcher would read from the peer,
// zeros here. The decoders run as the client runs them: the header; then,
// where the header's regions lie within the input, the DB directory, up to
// 1024 slots (each heap record verified against its heap bytes, or against
// zeros of its length when those lie past the input), and the scripts region.
//
// Every region carries a CRC-32C, which random bytes never match. The flag
// bits make the harness recompute them after mutation, so the fuzzer reaches
// the checks behind the CRCs; with a bit clear the CRC is left as found:
//   1 header CRC   2 DB directory CRC   4 slot CRCs   8 scripts region CRC
//   16 the region length comes from the input
//
// What decodes must survive a round trip through the encoders, and the views
// a decoded slot returns must lie inside the bytes it was given. The same
// bytes also go through the change log's header decoder.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/byte_order.h"
#include "proto/change_log_layout.h"
#include "proto/crc32c.h"
#include "proto/table_layout.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rrs::table;
using rrs::wire::load_u32;
using rrs::wire::load_u64;

using Bytes = std::span<const std::byte>;

constexpr uint8_t kFixHeaderCrc = 1, kFixDbdirCrc = 2, kFixSlotCrc = 4, kFixScriptsCrc = 8,
                  kClaimedLength = 16;
constexpr uint64_t kMaxSlotsChecked = 1024;
// A heap record past the input is verified against zeros of its length when
// it is no longer than this (the fetcher would read it from the peer).
constexpr uint64_t kMaxUnseenRecord = 1 << 20;

// [off, off + len) lies within [0, size), without overflow.
bool within(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

uint32_t crc(Bytes b) { return rrs::crc32c(0, b.data(), b.size()); }

bool inside(std::string_view view, Bytes b) {
  auto* lo = reinterpret_cast<const char*>(b.data());
  return view.empty() || (view.data() >= lo && view.data() + view.size() <= lo + b.size());
}

// Recomputes a slot's CRC (over header bytes 4..47, the key, the payload) if
// its key and payload can be found in the region.
void fix_slot_crc(std::vector<std::byte>& region, const Header& h, uint64_t slot_off) {
  std::byte* s = region.data() + slot_off;
  const uint64_t key_len = load_u32(s + slot::kKeyLen);
  const uint64_t payload_len = load_u64(s + slot::kPayloadLen);
  if (payload_len > region.size()) return;
  const uint64_t data_len = key_len + payload_len;
  const std::byte* data = nullptr;
  if (static_cast<uint8_t>(s[slot::kKind]) == static_cast<uint8_t>(SlotKind::kInline)) {
    if (!fits_inline(h.slot_size, key_len, payload_len)) return;
    data = s + kSlotHeaderSize;
  } else {
    const uint64_t ref = load_u64(s + slot::kHeapRef);
    if (!within(ref, data_len, h.heap_size) || !within(h.heap_offset, ref, region.size()) ||
        !within(h.heap_offset + ref, data_len, region.size()))
      return;
    data = region.data() + h.heap_offset + ref;
  }
  uint32_t c = rrs::crc32c(0, s + 4, kSlotHeaderSize - 4);
  rrs::wire::store_u32(s + slot::kCrc, rrs::crc32c(c, data, data_len));
}

void check_header_round_trip(const Header& h, uint64_t region_len) {
  std::array<std::byte, kHeaderSize> a{}, b{};
  encode_header(h, a);
  auto h2 = decode_header(a, region_len);
  FUZZ_CHECK(h2.ok(), "a re-encoded header fails: " + h2.status().message());
  encode_header(*h2, b);
  FUZZ_CHECK(a == b, "a header does not survive a round trip");
}

// The DB owning slot `i` by the directory, or (no directory) the slot's own claim.
uint32_t db_of(const std::vector<DbEntry>* dbs, uint64_t i, Bytes slot_bytes) {
  if (dbs)
    for (const DbEntry& e : *dbs)
      if (i >= e.first_slot && i - e.first_slot < e.key_count) return e.db;
  return load_u32(slot_bytes.data() + slot::kDb);
}

void check_slot(std::vector<std::byte>& region, const Header& h, const std::vector<DbEntry>* dbs,
                uint64_t i, uint8_t flags) {
  const uint64_t off = h.slot_offset(i);
  if (flags & kFixSlotCrc) fix_slot_crc(region, h, off);
  Bytes all(region);
  Bytes slot_bytes = all.subspan(off, h.slot_size);
  const uint32_t db = db_of(dbs, i, slot_bytes);
  auto v = decode_slot(h, i, db, slot_bytes);
  if (!v.ok()) return;
  FUZZ_CHECK(v->db == db, "slot " + std::to_string(i) + " in the wrong DB");
  if (v->kind == SlotKind::kInline) {
    FUZZ_CHECK(v->key.size() == v->key_len && v->payload.size() == v->payload_len &&
                   inside(v->key, slot_bytes.subspan(kSlotHeaderSize)) &&
                   inside(v->payload, slot_bytes.subspan(kSlotHeaderSize)),
               "inline slot " + std::to_string(i) + ": views outside the slot");
    return;
  }
  // Checked without the sum, which wraps for a heap of nearly 2^64 bytes.
  FUZZ_CHECK(v->payload_len <= h.heap_size && v->key_len <= h.heap_size - v->payload_len &&
                 within(v->heap_ref, v->data_len(), h.heap_size),
             "heap slot " + std::to_string(i) + " points outside the heap");
  std::vector<std::byte> unseen;
  Bytes heap_bytes;
  if (within(h.heap_offset + v->heap_ref, v->data_len(), region.size())) {
    heap_bytes = all.subspan(h.heap_offset + v->heap_ref, v->data_len());
  } else if (v->data_len() <= kMaxUnseenRecord) {
    unseen.resize(v->data_len());
    heap_bytes = unseen;
  } else {
    return;
  }
  if (!verify_heap_record(i, slot_bytes, *v, heap_bytes).ok()) return;
  FUZZ_CHECK(v->key.size() == v->key_len && v->payload.size() == v->payload_len &&
                 inside(v->key, heap_bytes) && inside(v->payload, heap_bytes),
             "heap slot " + std::to_string(i) + ": views outside its heap bytes");
}

void check_scripts(Bytes b, Header h, uint8_t flags) {
  if (flags & kFixScriptsCrc) h.scripts_crc32c = crc(b);
  auto s = decode_scripts(h, b);
  if (!s.ok()) return;
  FUZZ_CHECK(scripts_region_size(*s) == b.size(), "scripts region of " + std::to_string(b.size()) +
                                                      " bytes decodes to " +
                                                      std::to_string(scripts_region_size(*s)));
  std::vector<std::byte> again(b.size());
  h.scripts_crc32c = encode_scripts(*s, again);
  auto s2 = decode_scripts(h, again);
  FUZZ_CHECK(s2.ok() && s2->function_payload == s->function_payload &&
                 s2->function_libraries == s->function_libraries &&
                 s2->lua_scripts == s->lua_scripts,
             "scripts region does not survive a round trip");
}

}  // namespace

// The change log's header, which a follower reads from the same sidecar:
// what decodes describes a ring it can address, and survives re-encoding;
// the bytes after it, taken as the blocks and seals of what it holds, are
// either refused or verified up to a block boundary or the end, never past.
void check_change_log(Bytes bytes) {
  namespace cl = rrs::change_log;
  auto h = cl::decode_header(bytes);
  if (!h.ok()) return;
  FUZZ_CHECK(h->capacity > 0 && h->capacity <= cl::kMaxCapacity &&
                 h->capacity % cl::kBlockSize == 0,
             "change log capacity");
  FUZZ_CHECK(h->first <= h->start && h->start <= h->end && h->end - h->start <= h->capacity,
             "change log range");
  auto again = cl::decode_header(cl::encode_header(*h));
  FUZZ_CHECK(again.ok() && again->start == h->start && again->end == h->end &&
                 again->first == h->first && again->replid == h->replid && again->flags == h->flags,
             "change log header round trip");
  auto parts = cl::segments(*h, h->start, h->end);
  uint64_t total = 0;
  for (size_t i = 0; i < parts.count; ++i) {
    FUZZ_CHECK(parts.parts[i].offset + parts.parts[i].length <= cl::seals_offset(h->capacity),
               "change log segment outside the ring");
    total += parts.parts[i].length;
  }
  FUZZ_CHECK(total == h->end - h->start, "change log segments miss bytes");

  // The whole blocks that hold [start, end), if the input has them.
  if (h->end == h->start) return;
  const uint64_t begin = cl::block_begin(*h, h->start);
  const uint64_t blocks_end = cl::blocks_end(*h, h->end);
  auto seal_parts = cl::seal_segments(*h, begin, blocks_end);
  uint64_t seal_bytes = 0;
  for (size_t i = 0; i < seal_parts.count; ++i) {
    FUZZ_CHECK(seal_parts.parts[i].offset + seal_parts.parts[i].length <=
                   cl::memory_size(h->capacity),
               "change log seals outside the log");
    seal_bytes += seal_parts.parts[i].length;
  }
  Bytes rest = bytes.subspan(cl::kHeaderSize);
  const uint64_t block_bytes = blocks_end - begin;
  if (block_bytes + seal_bytes > rest.size()) return;
  auto verified = cl::verify(*h, h->start, h->end, rest.first(block_bytes),
                             rest.subspan(block_bytes, seal_bytes));
  if (!verified.ok()) return;
  FUZZ_CHECK((*verified >= h->end && *verified <= blocks_end) ||
                 (*verified >= begin && *verified < h->end &&
                  (*verified - h->first) % cl::kBlockSize == 0),
             "change log verified past its blocks, or short of a block boundary");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  size_t at = 1;
  uint64_t claimed = 0;
  if (flags & kClaimedLength) {
    if (size < at + 8) return 0;
    claimed = load_u64(reinterpret_cast<const std::byte*>(data + at));
    at += 8;
  }
  const auto* in = reinterpret_cast<const std::byte*>(data + at);
  std::vector<std::byte> region(in, in + size - at);
  const uint64_t region_len = (flags & kClaimedLength) ? claimed : region.size();

  if ((flags & kFixHeaderCrc) && region.size() >= kHeaderSize)
    rrs::wire::store_u32(region.data() + hdr::kHeaderCrc,
                         rrs::crc32c(0, region.data(), hdr::kHeaderCrc));
  Bytes all(region);
  check_change_log(all);
  auto h = decode_header(all.first(std::min(all.size(), kHeaderSize)), region_len);
  if (!h.ok()) return 0;
  FUZZ_CHECK(h->total_size <= region_len, "a table larger than its region");
  check_header_round_trip(*h, region_len);

  std::optional<std::vector<DbEntry>> dbs;
  if (within(h->dbdir_offset, h->dbdir_size, region.size())) {
    Bytes b = all.subspan(h->dbdir_offset, h->dbdir_size);
    Header hh = *h;
    if (flags & kFixDbdirCrc) hh.dbdir_crc32c = crc(b);
    auto d = decode_db_directory(hh, b);
    if (d.ok()) {
      FUZZ_CHECK(d->size() == h->db_count, "DB directory of the wrong length");
      std::vector<std::byte> again(b.size());
      for (size_t i = 0; i < d->size(); ++i)
        encode_db_entry((*d)[i],
                        std::span<std::byte, kDbEntrySize>(&again[i * kDbEntrySize], kDbEntrySize));
      FUZZ_CHECK(std::equal(again.begin(), again.end(), b.begin(), b.end()),
                 "DB directory does not re-encode to the same bytes");
      dbs = std::move(*d);
    }
  }

  for (uint64_t i = 0; i < std::min(h->slot_count, kMaxSlotsChecked); ++i) {
    if (!within(h->slot_offset(i), h->slot_size, region.size())) break;
    check_slot(region, *h, dbs ? &*dbs : nullptr, i, flags);
  }

  if (within(h->scripts_offset, h->scripts_size, region.size()))
    check_scripts(all.subspan(h->scripts_offset, h->scripts_size), *h, flags);
  return 0;
}
