// Encode/decode of the mapping table's header, directory and slots, and every
// way decoding must refuse bytes.
#include "proto/table_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "proto/byte_order.h"
#include "proto/crc32c.h"

namespace rrs::table {
namespace {

Header sample_header() {
  Header h;
  h.state = State::kReady;
  h.epoch = 42;
  h.created_unix_ms = 1700000000000;
  h.redis_version = "7.0.15";
  h.rdb_version = 10;
  h.db_count = 2;
  h.record_count = 3;
  h.slot_size = 128;
  EXPECT_TRUE(plan_geometry(h, 64).ok());
  return h;
}

std::vector<std::byte> encode(const Header& h) {
  std::vector<std::byte> b(kHeaderSize);
  encode_header(h, std::span<std::byte, kHeaderSize>(b.data(), kHeaderSize));
  return b;
}

// Re-seals the header CRC after a test pokes a field.
void reseal(std::vector<std::byte>& b) {
  wire::store_u32(&b[hdr::kHeaderCrc], crc32c(0, b.data(), hdr::kHeaderCrc));
}

TEST(TableHeader, RoundTrips) {
  Header h = sample_header();
  auto d = decode_header(encode(h), h.total_size);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->epoch, 42u);
  EXPECT_EQ(d->redis_version, "7.0.15");
  EXPECT_EQ(d->rdb_version, 10u);
  EXPECT_EQ(d->record_count, 3u);
  EXPECT_EQ(d->slot_size, 128u);
  EXPECT_EQ(d->slots_offset % kRegionAlign, 0u);
  EXPECT_EQ(d->heap_offset, h.heap_offset);
  EXPECT_EQ(d->slot_offset(2), h.slots_offset + 2 * 128);
  EXPECT_EQ(d->total_size, h.total_size);
}

TEST(TableHeader, GeometryIsPageAlignedAndOrdered) {
  Header h = sample_header();
  EXPECT_EQ(h.dbdir_offset, kRegionAlign);
  EXPECT_GE(h.slots_offset, h.dbdir_offset + h.dbdir_size);
  EXPECT_EQ(h.slots_size, 3u * 128);
  EXPECT_GE(h.heap_offset, h.slots_offset + h.slots_size);
  EXPECT_EQ(h.total_size % kRegionAlign, 0u);
  Header bad = h;
  bad.slot_size = 100;
  EXPECT_FALSE(plan_geometry(bad, 0).ok());
}

struct Corruption {
  const char* name;
  std::function<void(std::vector<std::byte>&)> poke;
  bool reseal;
  const char* expect;  // substring of the error
};

TEST(TableHeader, RejectsEveryInconsistency) {
  Header h = sample_header();
  const std::vector<Corruption> cases = {
      {"magic", [](auto& b) { b[0] = std::byte{'X'}; }, true, "magic"},
      {"version", [](auto& b) { wire::store_u16(&b[hdr::kLayoutVersion], 9); }, true, "layout version 9"},
      {"header size", [](auto& b) { wire::store_u16(&b[hdr::kHeaderSize], 128); }, true, "header size"},
      {"checksum", [](auto& b) { b[hdr::kEpoch] ^= std::byte{1}; }, false, "checksum"},
      {"building", [](auto& b) { wire::store_u32(&b[hdr::kState], 1); }, true, "still being built"},
      {"state", [](auto& b) { wire::store_u32(&b[hdr::kState], 7); }, true, "unknown state"},
      {"source", [](auto& b) { wire::store_u32(&b[hdr::kSourceKind], 9); }, true, "source kind"},
      {"reserved", [](auto& b) { b[hdr::kReserved + 3] = std::byte{1}; }, true, "reserved"},
      {"version text", [](auto& b) { b[hdr::kRedisVersion] = std::byte{0x01}; }, true, "printable"},
      {"slot header", [](auto& b) { wire::store_u32(&b[hdr::kSlotHeaderSize], 40); }, true, "slot header size"},
      {"too long", [](auto& b) { wire::store_u64(&b[hdr::kTotalSize], 1ull << 40); }, true, "published region"},
      {"slot size", [](auto& b) { wire::store_u32(&b[hdr::kSlotSize], 100); }, true, "slot size"},
      {"slot count", [](auto& b) { wire::store_u64(&b[hdr::kSlotCount], 4); }, true, "slot count"},
      {"db count", [](auto& b) { wire::store_u32(&b[hdr::kDbCount], 0); }, true, "DB count"},
      {"dbdir size", [](auto& b) { wire::store_u64(&b[hdr::kDbdirSize], 96); }, true, "directory size"},
      {"slots size", [](auto& b) { wire::store_u64(&b[hdr::kSlotsSize], 999); }, true, "slot region"},
      {"overlap", [](auto& b) { wire::store_u64(&b[hdr::kHeapOffset], 4096); }, true, "regions"},
      {"heap past end", [](auto& b) { wire::store_u64(&b[hdr::kHeapSize], ~0ull - 10); }, true, "regions"},
      {"huge slots", [](auto& b) {
         wire::store_u64(&b[hdr::kSlotCount], 1ull << 62);
         wire::store_u64(&b[hdr::kRecordCount], 1ull << 62);
       }, true, "slot region"},
  };
  for (const Corruption& c : cases) {
    std::vector<std::byte> b = encode(h);
    c.poke(b);
    if (c.reseal) reseal(b);
    auto d = decode_header(b, h.total_size);
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << d.status().message();
  }
  auto full = encode(h);
  EXPECT_FALSE(decode_header(std::span(full).first(100), h.total_size).ok());
}

TEST(DbDirectory, RoundTripsAndRejectsInconsistency) {
  Header h = sample_header();
  auto make = [&](std::vector<DbEntry> dbs) {
    std::vector<std::byte> b(dbs.size() * kDbEntrySize);
    for (size_t i = 0; i < dbs.size(); ++i)
      encode_db_entry(dbs[i], std::span<std::byte, kDbEntrySize>(b.data() + i * kDbEntrySize, kDbEntrySize));
    h.db_count = static_cast<uint32_t>(dbs.size());
    h.dbdir_size = b.size();
    h.dbdir_crc32c = crc32c(0, b.data(), b.size());
    return b;
  };
  auto ok = make({{0, 0, 2, 1}, {5, 2, 1, 0}});
  auto d = decode_db_directory(h, ok);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)[1].db, 5u);
  EXPECT_EQ((*d)[1].first_slot, 2u);

  EXPECT_FALSE(decode_db_directory(h, make({{5, 0, 2, 0}, {5, 2, 1, 0}})).ok());   // not increasing
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 3, 1, 0}})).ok());   // gap
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 3}, {1, 2, 1, 0}})).ok());   // expires > keys
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 2, 0, 0}})).ok());   // empty DB
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 1, 0}, {1, 1, 1, 0}})).ok());   // sums to 2 != 3
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 2, 5, 0}})).ok());   // past the end
  auto bad_crc = make({{0, 0, 2, 1}, {5, 2, 1, 0}});
  bad_crc[0] ^= std::byte{1};
  EXPECT_FALSE(decode_db_directory(h, bad_crc).ok());
}

class SlotTest : public ::testing::Test {
 protected:
  Header h = sample_header();
  std::string key = std::string("k\0\r\n", 4);
  std::string payload = std::string("\x00\x03" "bar" "\x0a\x00" "ABCDEFGH", 15);
  RecordIn rec{3, key, payload, 1234567};

  std::vector<std::byte> inline_slot() {
    std::vector<std::byte> s(h.slot_size);
    encode_inline_slot(rec, s);
    return s;
  }
  static void reseal(std::vector<std::byte>& s, std::string_view k, std::string_view p) {
    uint32_t c = crc32c(0, s.data() + 4, kSlotHeaderSize - 4);
    c = crc32c(c, k.data(), k.size());
    wire::store_u32(&s[slot::kCrc], crc32c(c, p.data(), p.size()));
  }
};

TEST_F(SlotTest, InlineRoundTripIsBinarySafe) {
  auto s = inline_slot();
  auto v = decode_slot(h, 7, 3, s);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->kind, SlotKind::kInline);
  EXPECT_EQ(v->key, key);
  EXPECT_EQ(v->payload, payload);
  EXPECT_EQ(v->expire_at_ms, 1234567);
}

TEST_F(SlotTest, HeapRoundTrip) {
  std::vector<std::byte> s(h.slot_size);
  encode_heap_slot(rec, 8, s);
  auto v = decode_slot(h, 0, 3, s);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->kind, SlotKind::kHeap);
  EXPECT_EQ(v->heap_ref, 8u);
  std::string heap = key + payload;
  auto bytes = std::as_bytes(std::span(heap));
  ASSERT_TRUE(verify_heap_record(0, s, *v, bytes).ok());
  EXPECT_EQ(v->key, key);
  EXPECT_EQ(v->payload, payload);
  heap[5] ^= 1;
  SlotView again = *decode_slot(h, 0, 3, s);
  EXPECT_FALSE(verify_heap_record(0, s, again, std::as_bytes(std::span(heap))).ok());
  EXPECT_FALSE(verify_heap_record(0, s, again, std::as_bytes(std::span(heap)).first(3)).ok());
}

TEST_F(SlotTest, RejectsEveryInconsistency) {
  struct Case {
    const char* name;
    std::function<void(std::vector<std::byte>&)> poke;
    bool reseal;
    uint32_t db;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"flipped byte", [](auto& s) { s[kSlotHeaderSize + 1] ^= std::byte{4}; }, false, 3, "checksum"},
      {"kind", [](auto& s) { s[slot::kKind] = std::byte{9}; }, true, 3, "kind"},
      {"reserved", [](auto& s) { s[slot::kReserved] = std::byte{1}; }, true, 3, "reserved"},
      {"wrong db", [](auto&) {}, false, 4, "directory"},
      {"key too long", [](auto& s) { wire::store_u32(&s[slot::kKeyLen], 600u << 20); }, true, 3, "512 MiB"},
      {"short payload", [](auto& s) { wire::store_u64(&s[slot::kPayloadLen], 3); }, true, 3, "shorter"},
      {"overrun", [](auto& s) { wire::store_u64(&s[slot::kPayloadLen], 100); }, true, 3, "overrun"},
      {"expiry", [](auto& s) { wire::store_i64(&s[slot::kExpireAt], -5); }, true, 3, "expiry"},
      {"inline heap ref", [](auto& s) { wire::store_u64(&s[slot::kHeapRef], 8); }, true, 3, "heap reference"},
      {"heap outside", [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kHeapRef], 64);
       }, true, 3, "outside the heap"},
      {"heap misaligned", [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kHeapRef], 3);
       }, true, 3, "outside the heap"},
      {"heap overflow", [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kPayloadLen], ~0ull);
       }, true, 3, "outside the heap"},
  };
  for (const Case& c : cases) {
    auto s = inline_slot();
    c.poke(s);
    if (c.reseal) reseal(s, key, payload);
    auto v = decode_slot(h, 9, c.db, s);
    ASSERT_FALSE(v.ok()) << c.name;
    EXPECT_NE(v.status().message().find("record 9"), std::string::npos) << c.name;
    EXPECT_NE(v.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << v.status().message();
  }
  auto s = inline_slot();
  EXPECT_FALSE(decode_slot(h, 0, 3, std::span(s).first(64)).ok());
}

TEST(SlotFit, InlineCapacityIsSlotMinusHeader) {
  EXPECT_TRUE(fits_inline(128, 40, 40));
  EXPECT_FALSE(fits_inline(128, 40, 41));
  EXPECT_FALSE(fits_inline(128, ~0ull, 1));
  EXPECT_EQ(heap_footprint(3, 10), 16u);
}

}  // namespace
}  // namespace rrs::table
