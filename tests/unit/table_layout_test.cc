// Encode/decode of the mapping table's header, directory, slots and scripts
// region, and every way decoding must refuse bytes.
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

Header sample_header(uint64_t scripts_bytes = 0) {
  Header h;
  h.state = State::kReady;
  h.epoch = 42;
  h.created_unix_ms = 1700000000000;
  h.engine = Engine::kValkey;
  h.server_version = "9.1.2";
  h.rdb_version = 80;
  h.module_aux_count = 2;
  h.empty_skipped = 5;
  h.keys_lost = 7;
  h.lossy[0] = {2, 1};
  h.db_count = 2;
  h.record_count = 3;
  h.slot_size = 128;
  EXPECT_TRUE(plan_geometry(h, 64, scripts_bytes).ok());
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
  EXPECT_EQ(d->engine, Engine::kValkey);
  EXPECT_EQ(d->server_version, "9.1.2");
  EXPECT_EQ(d->rdb_version, 80u);
  EXPECT_EQ(d->module_aux_count, 2u);
  EXPECT_EQ(d->empty_skipped, 5u);
  EXPECT_EQ(d->keys_lost, 7u);
  EXPECT_EQ(d->lossy[0].count, 2u);
  EXPECT_EQ(d->lossy[0].first_slot, 1u);
  EXPECT_EQ(d->lossy[1].count, 0u);
  EXPECT_EQ(d->record_count, 3u);
  EXPECT_EQ(d->slot_size, 128u);
  EXPECT_EQ(d->slots_offset % kRegionAlign, 0u);
  EXPECT_EQ(d->heap_offset, h.heap_offset);
  EXPECT_EQ(d->slot_offset(2), h.slots_offset + uint64_t{2} * 128);
  EXPECT_EQ(d->total_size, h.total_size);
  EXPECT_EQ(d->layout_version, kLayoutVersion);
  EXPECT_EQ(d->scripts_offset, 0u);
  EXPECT_EQ(d->scripts_size, 0u);
}

TEST(TableHeader, RoundTripsTheScriptsRegionFields) {
  Header h = sample_header(40);
  h.scripts_crc32c = 0xdeadbeef;
  auto d = decode_header(encode(h), h.total_size);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->scripts_offset, h.scripts_offset);
  EXPECT_EQ(d->scripts_size, 40u);
  EXPECT_EQ(d->scripts_crc32c, 0xdeadbeefu);
}

// A table from an RDB file: its kind, and the replication position the file
// carried, with the DB its stream had selected there.
TEST(TableHeader, RoundTripsAnRdbFileSource) {
  Header h = sample_header();
  h.source_kind = SourceKind::kRdbFile;
  h.source_replid = std::string(40, 'a');
  h.source_offset = 123456;
  h.source_stream_db = 7;
  auto d = decode_header(encode(h), h.total_size);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->source_kind, SourceKind::kRdbFile);
  EXPECT_EQ(d->source_replid, std::string(40, 'a'));
  EXPECT_EQ(d->source_offset, 123456u);
  EXPECT_EQ(d->source_stream_db, 7u);
  EXPECT_STREQ(source_name(d->source_kind), "rdb");
  EXPECT_STREQ(source_name(SourceKind::kPsync), "psync");
  EXPECT_STREQ(source_name(SourceKind::kScan), "scan");
}

struct Corruption {
  const char* name;
  std::function<void(std::vector<std::byte>&)> poke;
  bool reseal;
  const char* expect;  // substring of the error
};

TEST(TableHeader, GeometryIsPageAlignedAndOrdered) {
  Header h = sample_header();
  EXPECT_EQ(h.scripts_offset, 0u);
  EXPECT_EQ(h.scripts_size, 0u);
  EXPECT_EQ(h.slots_offset, kRegionAlign);
  EXPECT_EQ(h.slots_size, 3u * 128);
  EXPECT_EQ(h.slot_capacity, 3u);
  EXPECT_EQ(h.heap_offset, 2 * kRegionAlign);
  EXPECT_EQ(h.heap_capacity, h.heap_size);
  // The DB directory follows the heap, once the table is complete.
  EXPECT_EQ(h.dbdir_offset, 3 * kRegionAlign);
  EXPECT_EQ(h.total_size, 4 * kRegionAlign);
  Header bad = h;
  bad.slot_size = 100;
  EXPECT_FALSE(plan_geometry(bad, 0).ok());

  // The scripts region comes right after the header page, before the slots.
  Header s = sample_header(5000);
  EXPECT_EQ(s.scripts_offset, kRegionAlign);
  EXPECT_EQ(s.scripts_size, 5000u);
  EXPECT_EQ(s.slots_offset, 3 * kRegionAlign);
  EXPECT_EQ(s.total_size, h.total_size + 2 * kRegionAlign);
}

// A streamed table: published with room to spare, its header describing the
// complete prefix as records come, then completed with the DB directory
// after the heap; the unused slot room stays a gap.
TEST(TableHeader, AStreamedTableGrowsInsideItsRoomThenCompletes) {
  Header h = sample_header();
  h.state = State::kBuilding;
  ASSERT_TRUE(plan_streamed(h, 0, 100, 1u << 20).ok());
  EXPECT_EQ(h.heap_offset, 5 * kRegionAlign);  // 100 slots of 128 B from 4096, page aligned
  EXPECT_EQ(h.total_size, h.heap_offset + (1u << 20));
  EXPECT_EQ(h.record_count, 0u);
  EXPECT_EQ(h.db_count, 0u);
  h.lossy = {};
  const uint64_t room = h.total_size;
  auto d = decode_header(encode(h), room);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->state, State::kBuilding);
  EXPECT_EQ(d->slot_capacity, 100u);
  EXPECT_EQ(d->heap_capacity, 1u << 20);

  h.record_count = h.slot_count = 7;
  h.slots_size = uint64_t{7} * 128;
  h.heap_size = 4096;
  d = decode_header(encode(h), room);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->record_count, 7u);
  EXPECT_EQ(d->heap_size, 4096u);

  Header broken = h;
  broken.state = State::kBroken;
  broken.broken_reason = "the master's RDB stream broke off";
  d = decode_header(encode(broken), room);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->broken_reason, "the master's RDB stream broke off");

  h.state = State::kReady;
  h.db_count = 1;
  plan_completion(h);
  EXPECT_EQ(h.slot_capacity, 100u);
  EXPECT_EQ(h.heap_capacity, 4096u);
  EXPECT_EQ(h.dbdir_offset, h.heap_offset + 4096);
  EXPECT_EQ(h.total_size, h.dbdir_offset + kRegionAlign);
  d = decode_header(encode(h), room);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->state, State::kReady);
  EXPECT_EQ(d->total_size, h.total_size);
  EXPECT_EQ(d->dbdir_offset, h.dbdir_offset);
}

TEST(TableHeader, RefusesAStreamedHeaderThatContradictsItself) {
  Header h = sample_header();
  h.state = State::kBuilding;
  h.lossy = {};
  ASSERT_TRUE(plan_streamed(h, 0, 10, 8192).ok());
  h.record_count = h.slot_count = 2;
  h.slots_size = uint64_t{2} * 128;
  const std::vector<Corruption> cases = {
      {"more slots than room",
       [](auto& b) {
         wire::store_u64(&b[hdr::kSlotCount], 11);
         wire::store_u64(&b[hdr::kRecordCount], 11);
         wire::store_u64(&b[hdr::kSlotsSize], 11 * 128);
       },
       true, "room"},
      {"heap past its room", [](auto& b) { wire::store_u64(&b[hdr::kHeapSize], 8193); }, true,
       "regions"},
      {"slot room over the heap", [](auto& b) { wire::store_u64(&b[hdr::kSlotCapacity], 64); },
       true, "regions"},
      {"a directory while building", [](auto& b) { wire::store_u32(&b[hdr::kDbCount], 1); }, true,
       "not ready"},
      {"broken without a reason", [](auto& b) { wire::store_u32(&b[hdr::kState], 3); }, true,
       "broken"},
      {"a reason, not broken", [](auto& b) { b[hdr::kBrokenReason] = std::byte{'x'}; }, true,
       "not broken"},
      {"a reason not printable",
       [](auto& b) {
         wire::store_u32(&b[hdr::kState], 3);
         b[hdr::kBrokenReason] = std::byte{1};
       },
       true, "broken"},
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
}

TEST(TableHeader, RejectsEveryInconsistency) {
  Header h = sample_header();
  const std::vector<Corruption> cases = {
      {"magic", [](auto& b) { b[0] = std::byte{'X'}; }, true, "magic"},
      {"version", [](auto& b) { wire::store_u16(&b[hdr::kLayoutVersion], 9); }, true,
       "layout version 9"},
      {"version 1", [](auto& b) { wire::store_u16(&b[hdr::kLayoutVersion], 1); }, true,
       "layout version 1"},
      {"header size", [](auto& b) { wire::store_u16(&b[hdr::kHeaderSize], 128); }, true,
       "header size"},
      {"checksum", [](auto& b) { b[hdr::kEpoch] ^= std::byte{1}; }, false, "checksum"},
      {"directory while building", [](auto& b) { wire::store_u32(&b[hdr::kState], 1); }, true,
       "not ready"},
      {"state", [](auto& b) { wire::store_u32(&b[hdr::kState], 7); }, true, "unknown state"},
      {"source", [](auto& b) { wire::store_u32(&b[hdr::kSourceKind], 9); }, true, "source kind"},
      {"stream db without replid", [](auto& b) { wire::store_u32(&b[hdr::kStreamDb], 1); }, true,
       "stream DB 1 without a replication ID"},
      {"reserved", [](auto& b) { b[hdr::kReserved2 + 1] = std::byte{1}; }, true, "reserved"},
      {"reserved end", [](auto& b) { b[hdr::kHeaderCrc - 1] = std::byte{1}; }, true, "reserved"},
      {"reserved after lossy", [](auto& b) { b[hdr::kReserved2] = std::byte{1}; }, true,
       "reserved"},
      {"more lossy than records", [](auto& b) { wire::store_u64(&b[hdr::kLossy + 16], 4); }, true,
       "lossy-records entry"},
      {"first lossy past the end", [](auto& b) { wire::store_u64(&b[hdr::kLossy + 8], 3); }, true,
       "lossy-records entry"},
      {"first lossy without any", [](auto& b) { wire::store_u64(&b[hdr::kLossy + 24], 1); }, true,
       "lossy-records entry"},
      {"scripts offset alone", [](auto& b) { wire::store_u64(&b[hdr::kScriptsOffset], 8192); },
       true, "no scripts region"},
      {"scripts crc alone", [](auto& b) { wire::store_u32(&b[hdr::kScriptsCrc], 1); }, true,
       "no scripts region"},
      {"version text", [](auto& b) { b[hdr::kServerVersion] = std::byte{0x01}; }, true,
       "printable"},
      {"engine", [](auto& b) { b[hdr::kEngine] = std::byte{3}; }, true, "unknown engine"},
      {"engine padding", [](auto& b) { b[hdr::kEngine + 1] = std::byte{1}; }, true, "reserved"},
      {"rdb version", [](auto& b) { wire::store_u32(&b[hdr::kRdbVersion], 13); }, true,
       "RDB version 13"},
      {"slot header", [](auto& b) { wire::store_u32(&b[hdr::kSlotHeaderSize], 40); }, true,
       "slot header size"},
      {"too long", [](auto& b) { wire::store_u64(&b[hdr::kTotalSize], 1ull << 40); }, true,
       "published region"},
      {"slot size", [](auto& b) { wire::store_u32(&b[hdr::kSlotSize], 100); }, true, "slot size"},
      {"slot count", [](auto& b) { wire::store_u64(&b[hdr::kSlotCount], 4); }, true, "slot count"},
      {"db count", [](auto& b) { wire::store_u32(&b[hdr::kDbCount], 0); }, true, "DB count"},
      {"dbdir size", [](auto& b) { wire::store_u64(&b[hdr::kDbdirSize], 96); }, true,
       "directory size"},
      {"slots size", [](auto& b) { wire::store_u64(&b[hdr::kSlotsSize], 999); }, true,
       "slot region"},
      {"overlap", [](auto& b) { wire::store_u64(&b[hdr::kHeapOffset], 4096); }, true, "regions"},
      {"directory inside the heap",
       [](auto& b) { wire::store_u64(&b[hdr::kDbdirOffset], 2 * 4096 + 32); }, true, "regions"},
      {"heap past end", [](auto& b) { wire::store_u64(&b[hdr::kHeapSize], ~0ull - 10); }, true,
       "regions"},
      {"huge slots",
       [](auto& b) {
         wire::store_u64(&b[hdr::kSlotCount], 1ull << 62);
         wire::store_u64(&b[hdr::kRecordCount], 1ull << 62);
       },
       true, "slot region"},
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

TEST(TableHeader, RejectsABadScriptsRegion) {
  const Header h = sample_header(40);
  const uint64_t at = h.scripts_offset;
  const std::vector<Corruption> cases = {
      {"misaligned", [=](auto& b) { wire::store_u64(&b[hdr::kScriptsOffset], at + 8); }, true,
       "start at 4096"},
      {"odd size", [](auto& b) { wire::store_u64(&b[hdr::kScriptsSize], 41); }, true,
       "multiple of 8"},
      {"over the limit",
       [](auto& b) { wire::store_u64(&b[hdr::kScriptsSize], kMaxScriptsSize + 8); }, true, "limit"},
      {"into the slots", [](auto& b) { wire::store_u64(&b[hdr::kScriptsSize], 8192); }, true,
       "regions"},
      {"after the slots",
       [=](auto& b) { wire::store_u64(&b[hdr::kScriptsOffset], at + 2 * kRegionAlign); }, true,
       "start at 4096"},
      {"overflowing size", [](auto& b) { wire::store_u64(&b[hdr::kScriptsSize], ~0ull - 7); }, true,
       "limit"},
      {"zero offset", [](auto& b) { wire::store_u64(&b[hdr::kScriptsOffset], 0); }, true,
       "start at 4096"},
  };
  ASSERT_TRUE(decode_header(encode(h), h.total_size).ok());
  for (const Corruption& c : cases) {
    std::vector<std::byte> b = encode(h);
    c.poke(b);
    if (c.reseal) reseal(b);
    auto d = decode_header(b, h.total_size);
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << d.status().message();
  }
}

TEST(DbDirectory, RoundTripsAndRejectsInconsistency) {
  Header h = sample_header();
  auto make = [&](std::vector<DbEntry> dbs) {
    std::vector<std::byte> b(dbs.size() * kDbEntrySize);
    for (size_t i = 0; i < dbs.size(); ++i)
      encode_db_entry(dbs[i], std::span<std::byte, kDbEntrySize>(b.data() + i * kDbEntrySize,
                                                                 kDbEntrySize));
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

  EXPECT_FALSE(decode_db_directory(h, make({{5, 0, 2, 0}, {5, 2, 1, 0}})).ok());  // not increasing
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 3, 1, 0}})).ok());  // gap
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 3}, {1, 2, 1, 0}})).ok());  // expires > keys
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 2, 0, 0}})).ok());  // empty DB
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 1, 0}, {1, 1, 1, 0}})).ok());  // sums to 2 != 3
  EXPECT_FALSE(decode_db_directory(h, make({{0, 0, 2, 0}, {1, 2, 5, 0}})).ok());  // past the end
  auto bad_crc = make({{0, 0, 2, 1}, {5, 2, 1, 0}});
  bad_crc[0] ^= std::byte{1};
  EXPECT_FALSE(decode_db_directory(h, bad_crc).ok());
}

class SlotTest : public ::testing::Test {
 protected:
  Header h = sample_header();
  std::string key = std::string("k\0\r\n", 4);
  std::string payload = std::string("\x00\x03"
                                    "bar"
                                    "\x0a\x00"
                                    "ABCDEFGH",
                                    15);
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
      {"flipped byte", [](auto& s) { s[kSlotHeaderSize + 1] ^= std::byte{4}; }, false, 3,
       "checksum"},
      {"kind", [](auto& s) { s[slot::kKind] = std::byte{9}; }, true, 3, "kind"},
      {"reserved", [](auto& s) { s[slot::kReserved] = std::byte{1}; }, true, 3, "reserved"},
      {"wrong db", [](auto&) {}, false, 4, "directory"},
      {"key too long", [](auto& s) { wire::store_u32(&s[slot::kKeyLen], 600u << 20); }, true, 3,
       "512 MiB"},
      {"short payload", [](auto& s) { wire::store_u64(&s[slot::kPayloadLen], 3); }, true, 3,
       "shorter"},
      {"overrun", [](auto& s) { wire::store_u64(&s[slot::kPayloadLen], 100); }, true, 3, "overrun"},
      {"expiry", [](auto& s) { wire::store_i64(&s[slot::kExpireAt], -5); }, true, 3, "expiry"},
      {"inline heap ref", [](auto& s) { wire::store_u64(&s[slot::kHeapRef], 8); }, true, 3,
       "heap reference"},
      {"heap outside",
       [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kHeapRef], 64);
       },
       true, 3, "outside the heap"},
      {"heap misaligned",
       [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kHeapRef], 3);
       },
       true, 3, "outside the heap"},
      {"heap overflow",
       [](auto& s) {
         s[slot::kKind] = std::byte{2};
         wire::store_u64(&s[slot::kPayloadLen], ~0ull);
       },
       true, 3, "outside the heap"},
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

// A peer may publish a region of nearly 2^64 bytes, and a header whose heap
// fills it: a heap slot whose key_len + payload_len wraps to a small number
// must be refused, never reach verify_heap_record as a short record.
TEST_F(SlotTest, RefusesAKeyPlusPayloadThatWrapsInAHugeHeap) {
  Header huge = h;  // still building: the heap's room runs to the end
  huge.state = State::kBuilding;
  huge.db_count = 0;
  huge.dbdir_offset = huge.dbdir_size = 0;
  huge.dbdir_crc32c = 0;
  huge.total_size = ~0ull & ~uint64_t{kRegionAlign - 1};
  huge.heap_size = huge.heap_capacity = huge.total_size - huge.heap_offset;
  auto header = decode_header(encode(huge), ~0ull);
  ASSERT_TRUE(header.ok()) << header.status().message();
  ASSERT_EQ(header->heap_size, huge.heap_size);

  std::vector<std::byte> s(h.slot_size);
  encode_heap_slot(rec, 8, s);
  // The payload fits the heap alone; with the key the sum passes 2^64 and
  // wraps to 3,516 bytes, shorter than the key itself.
  wire::store_u32(&s[slot::kKeyLen], 20000);
  wire::store_u64(&s[slot::kPayloadLen], huge.heap_size - 100);
  ASSERT_LT(uint64_t{20000} + (huge.heap_size - 100), uint64_t{20000});
  reseal(s, key, payload);
  auto v = decode_slot(*header, 9, 3, s);
  ASSERT_FALSE(v.ok()) << "accepted a record of " << v->data_len() << " bytes";
  EXPECT_NE(v.status().message().find("outside the heap"), std::string::npos)
      << v.status().message();

  // The largest key and payload that do fit such a heap are still accepted.
  wire::store_u64(&s[slot::kPayloadLen], huge.heap_size - 8 - 20000);
  reseal(s, key, payload);
  EXPECT_TRUE(decode_slot(*header, 9, 3, s).ok());
}

// verify_heap_record checks its bytes' length without summing key_len and
// payload_len, so even a view no one validated cannot make it read past them
// (it threw std::out_of_range, which ended the client with SIGABRT).
TEST_F(SlotTest, VerifyHeapRecordRefusesAWrappingLength) {
  std::vector<std::byte> s(h.slot_size);
  encode_heap_slot(rec, 8, s);
  SlotView v = *decode_slot(h, 0, 3, s);
  v.key_len = 200;
  v.payload_len = ~0ull - 99;  // data_len() wraps to 100
  std::vector<std::byte> heap(100);
  Status st;
  EXPECT_NO_THROW(st = verify_heap_record(0, s, v, heap));
  EXPECT_FALSE(st.ok());
  v.key_len = 7;
  v.payload_len = 50;  // key + payload is 57, the bytes 100
  EXPECT_FALSE(verify_heap_record(0, s, v, heap).ok());
}

// A FUNCTION DUMP-shaped payload: opaque to the table, at least a trailer long.
const std::string kFunctionPayload = std::string("\xf5\x00lib code\x0a\x00", 12) + "CRC64xyz";

class ScriptsTest : public ::testing::Test {
 protected:
  Header h = sample_header();

  // Points the header at `region` as its scripts region.
  void seal(const std::vector<std::byte>& region) {
    h.scripts_size = region.size();
    h.scripts_crc32c = crc32c(0, region.data(), region.size());
  }
  std::vector<std::byte> encode_region(const Scripts& s) {
    std::vector<std::byte> b(scripts_region_size(s));
    uint32_t crc = encode_scripts(s, b);
    EXPECT_EQ(crc, crc32c(0, b.data(), b.size()));
    seal(b);
    return b;
  }
  // One entry by hand: header, data, `pad` bytes of `pad_byte`.
  static void entry(std::vector<std::byte>& out, uint8_t kind, uint32_t count, uint64_t len,
                    std::string_view data, size_t pad, std::byte pad_byte = std::byte{0}) {
    size_t at = out.size();
    out.resize(at + kScriptEntryHeaderSize);
    out[at + script::kKind] = std::byte{kind};
    wire::store_u32(&out[at + script::kCount], count);
    wire::store_u64(&out[at + script::kLen], len);
    for (char c : data) out.push_back(static_cast<std::byte>(c));
    out.insert(out.end(), pad, pad_byte);
  }
  Result<Scripts> decode(const std::vector<std::byte>& region) { return decode_scripts(h, region); }
};

TEST_F(ScriptsTest, RoundTripsFunctionsAndLuaScripts) {
  Scripts in;
  in.function_payload = kFunctionPayload;
  in.function_libraries = 2;
  in.lua_scripts = {"return 1", "", std::string("return '\0\r\n'", 12), std::string(8, 'x')};
  auto region = encode_region(in);
  EXPECT_EQ(region.size() % kScriptAlign, 0u);
  // 16 + 24, then 16 + 8, 16 + 0, 16 + 16, 16 + 8.
  EXPECT_EQ(region.size(), 40u + 24 + 16 + 32 + 24);
  auto out = decode(region);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->function_payload, in.function_payload);
  EXPECT_EQ(out->function_libraries, 2u);
  EXPECT_EQ(out->lua_scripts, in.lua_scripts);
}

TEST_F(ScriptsTest, EmptyAndSingleKindRegions) {
  Scripts none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(scripts_region_size(none), 0u);
  auto empty = decode({});
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());

  Scripts lua;
  lua.lua_scripts = {"return redis.call('GET', KEYS[1])"};
  auto l = decode(encode_region(lua));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_TRUE(l->function_payload.empty());
  EXPECT_EQ(l->function_libraries, 0u);
  EXPECT_EQ(l->lua_scripts, lua.lua_scripts);

  Scripts fn;
  fn.function_payload = kFunctionPayload;
  fn.function_libraries = 1;
  auto f = decode(encode_region(fn));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->function_payload, kFunctionPayload);
  EXPECT_TRUE(f->lua_scripts.empty());
}

TEST_F(ScriptsTest, RoundTripsTheHashSlotsOfAClusterShard) {
  Scripts in;
  in.lua_scripts = {"return 1"};
  SlotRanges shard = SlotRanges::of(0, 5460);
  shard.add({7000, 7000});
  shard.add({16383, 16383});
  in.hash_slots = shard;
  EXPECT_FALSE(in.empty());
  auto out = decode(encode_region(in));
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_TRUE(out->hash_slots);
  EXPECT_EQ(*out->hash_slots, shard);
  EXPECT_EQ(out->lua_scripts, in.lua_scripts);

  // A shard that serves no slot says so; a table of a standalone source has no entry.
  Scripts none;
  none.hash_slots = SlotRanges();
  auto empty = decode(encode_region(none));
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  ASSERT_TRUE(empty->hash_slots);
  EXPECT_TRUE(empty->hash_slots->empty());
  Scripts lua;
  lua.lua_scripts = {"return 1"};
  auto standalone = decode(encode_region(lua));
  ASSERT_TRUE(standalone.ok());
  EXPECT_FALSE(standalone->hash_slots);
}

TEST_F(ScriptsTest, RejectsABadHashSlotsEntry) {
  const std::string none(kHashSlotBitmapSize, '\0');
  const std::vector<std::pair<std::function<void(std::vector<std::byte>&)>, const char*>> cases = {
      {[&](auto& b) { entry(b, 3, 0, 8, std::string(8, '\0'), 0); },
       "hash slots entry of 8 bytes, expected 2048"},
      {[&](auto& b) { entry(b, 3, 2, none.size(), "\x01" + none.substr(1), 0); },
       "counts 2 slots, its bitmap 1"},
      {[&](auto& b) {
         entry(b, 3, 0, none.size(), none, 0);
         entry(b, 3, 0, none.size(), none, 0);
       },
       "a second hash slots entry"},
  };
  for (const auto& [build, expect] : cases) {
    std::vector<std::byte> b;
    build(b);
    seal(b);
    auto d = decode(b);
    ASSERT_FALSE(d.ok()) << expect;
    EXPECT_NE(d.status().message().find(expect), std::string::npos) << d.status().message();
  }
}

TEST_F(ScriptsTest, RejectsEveryInconsistency) {
  struct Case {
    const char* name;
    std::function<void(std::vector<std::byte>&)> build;
    const char* expect;
  };
  const std::string fn = kFunctionPayload;  // 20 bytes: 4 of padding
  const std::vector<Case> cases = {
      {"truncated entry header",
       [&](auto& b) {
         entry(b, 2, 1, 8, "return 1", 0);
         b.resize(b.size() + 8);
       },
       "entry at offset 24: truncated"},
      {"length past the end", [&](auto& b) { entry(b, 2, 1, 100, "return 1", 0); },
       "runs past the end"},
      {"huge length", [&](auto& b) { entry(b, 2, 1, ~0ull, "return 1", 0); }, "runs past the end"},
      {"length into the padding", [&](auto& b) { entry(b, 2, 1, 12, "return 1", 0); },
       "runs past the end"},
      {"padding past the end", [&](auto& b) { entry(b, 2, 1, 5, "retur", 0); },
       "runs past the end"},
      {"unknown kind",
       [&](auto& b) {
         entry(b, 2, 1, 8, "return 1", 0);
         entry(b, 7, 1, 8, "return 1", 0);
       },
       "entry at offset 24: unknown kind 7"},
      {"kind zero", [&](auto& b) { entry(b, 0, 1, 8, "return 1", 0); },
       "entry at offset 0: unknown kind 0"},
      {"two function entries",
       [&](auto& b) {
         entry(b, 1, 1, fn.size(), fn, 4);
         entry(b, 1, 1, fn.size(), fn, 4);
       },
       "entry at offset 40: a second function entry"},
      {"no libraries", [&](auto& b) { entry(b, 1, 0, fn.size(), fn, 4); }, "library count 0"},
      {"more libraries than bytes", [&](auto& b) { entry(b, 1, 21, fn.size(), fn, 4); },
       "library count 21"},
      {"short function payload", [&](auto& b) { entry(b, 1, 1, 8, "12345678", 0); },
       "shorter than any"},
      {"lua count", [&](auto& b) { entry(b, 2, 2, 8, "return 1", 0); }, "count 2"},
      {"reserved",
       [&](auto& b) {
         entry(b, 2, 1, 8, "return 1", 0);
         b[script::kReserved + 2] = std::byte{1};
       },
       "reserved"},
      {"padding", [&](auto& b) { entry(b, 2, 1, 5, "retur", 3, std::byte{'n'}); },
       "padding is not zero"},
  };
  for (const Case& c : cases) {
    std::vector<std::byte> b;
    c.build(b);
    seal(b);
    auto d = decode(b);
    ASSERT_FALSE(d.ok()) << c.name;
    EXPECT_NE(d.status().message().find("scripts region"), std::string::npos) << c.name;
    EXPECT_NE(d.status().message().find(c.expect), std::string::npos)
        << c.name << ": " << d.status().message();
  }

  Scripts in;
  in.function_payload = kFunctionPayload;
  in.function_libraries = 1;
  in.lua_scripts = {"return 1"};
  auto good = encode_region(in);
  auto flipped = good;
  flipped[kScriptEntryHeaderSize + 3] ^= std::byte{1};  // not resealed
  auto d = decode(flipped);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("checksum mismatch"), std::string::npos)
      << d.status().message();
  // The header and the bytes read must agree on the size.
  EXPECT_FALSE(decode_scripts(h, std::span(good).first(good.size() - 8)).ok());
  EXPECT_FALSE(decode_scripts(h, {}).ok());
}

TEST(SlotFit, InlineCapacityIsSlotMinusHeader) {
  EXPECT_TRUE(fits_inline(128, 40, 40));
  EXPECT_FALSE(fits_inline(128, 40, 41));
  EXPECT_FALSE(fits_inline(128, ~0ull, 1));
  EXPECT_EQ(heap_footprint(3, 10), 16u);
}

}  // namespace
}  // namespace rrs::table
