// Tables built by the server decode, record for record, with the client-side
// decoders alone: the layout is self-describing.
#include "server/table_builder.h"
#include "tests/support/fake_payload.h"

#include <gtest/gtest.h>

#include "proto/dump_payload.h"
#include "proto/rdb_format.h"

#include <map>
#include <string>
#include <vector>

#include "proto/table_layout.h"

namespace rrs {
namespace {

struct Rec {
  uint32_t db;
  std::string key, payload;
  int64_t expire;
};

// Decodes every record of `t` using only proto/ functions.
std::vector<Rec> walk(const Table& t) {
  auto bytes = t.bytes.span();
  auto h = table::decode_header(bytes.first(table::kHeaderSize), bytes.size());
  EXPECT_TRUE(h.ok()) << h.status().message();
  auto dbs = table::decode_db_directory(*h, bytes.subspan(h->dbdir_offset, h->dbdir_size));
  EXPECT_TRUE(dbs.ok()) << dbs.status().message();
  std::vector<Rec> out;
  for (const table::DbEntry& db : *dbs) {
    for (uint64_t i = db.first_slot; i < db.first_slot + db.key_count; ++i) {
      auto slot = bytes.subspan(h->slot_offset(i), h->slot_size);
      auto v = table::decode_slot(*h, i, db.db, slot);
      EXPECT_TRUE(v.ok()) << v.status().message();
      if (v->kind == table::SlotKind::kHeap) {
        auto heap = bytes.subspan(h->heap_offset + v->heap_ref, v->data_len());
        EXPECT_TRUE(table::verify_heap_record(i, slot, *v, heap).ok());
      }
      out.push_back({v->db, std::string(v->key), std::string(v->payload), v->expire_at_ms});
    }
  }
  return out;
}

TEST(TableBuilder, RoundTripsInlineAndHeapRecordsAcrossDbs) {
  std::vector<Rec> in;
  in.reserve(504);
  for (int i = 0; i < 500; ++i)  // DB 0 then DB 5, as an RDB or a scan hands them over
    in.push_back({static_cast<uint32_t>(i < 330 ? 0 : 5), "key:" + std::to_string(i),
                  test::fake_payload(100, static_cast<char>('a' + i % 26)),
                  i % 7 == 0 ? 1700000000000 + i : -1});
  in.push_back({5, std::string("\0\r\n", 3), test::fake_payload(1, 'x'), -1});   // binary key
  in.push_back({5, "", test::fake_payload(1, 'e'), -1});                         // empty key
  in.push_back({15, "big", test::fake_payload(9u << 20, 'B'), -1});              // heap
  in.push_back({15, "medium", test::fake_payload(100000, 'M'), 1800000000000});  // heap

  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  for (const Rec& r : in) b.add(r.db, r.key, r.payload, r.expire);
  auto t = b.build(77);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->header.epoch, 77u);
  EXPECT_EQ((*t)->header.rdb_version, 10u);
  EXPECT_EQ((*t)->header.db_count, 3u);
  EXPECT_EQ(b.slot_choice().heap_records, 2u);
  EXPECT_EQ((*t)->bytes.size() % 4096, 0u);

  std::vector<Rec> out = walk(**t);
  ASSERT_EQ(out.size(), in.size());
  // Same records, grouped by DB (stable within a DB).
  std::map<uint32_t, std::vector<const Rec*>> by_db;
  for (const Rec& r : in) by_db[r.db].push_back(&r);
  size_t k = 0;
  for (auto& [db, recs] : by_db)
    for (const Rec* r : recs) {
      EXPECT_EQ(out[k].db, r->db);
      EXPECT_EQ(out[k].key, r->key);
      EXPECT_EQ(out[k].payload, r->payload);
      EXPECT_EQ(out[k].expire, r->expire);
      ++k;
    }
}

// Past the sample the slot size is fixed, records go straight to their
// slots or the heap, and both regions grow (many times over) as they come.
TEST(TableBuilder, RecordsAfterTheSampleAndGrowingRegions) {
  std::vector<Rec> in;
  for (int i = 0; i < 30000; ++i) {
    uint32_t db = i < 10000 ? 0 : i < 20000 ? 3 : 9;
    size_t size = i % 97 == 0 ? 20000 : 200 + i % 700;  // some go to the heap
    in.push_back({db, "k" + std::to_string(i),
                  test::fake_payload(size, static_cast<char>('a' + i % 26)),
                  i % 5 == 0 ? 1700000000000 + i : -1});
  }
  TableBuilder b;
  for (const Rec& r : in) b.add(r.db, r.key, r.payload, r.expire);
  EXPECT_EQ(b.record_count(), in.size());
  auto t = b.build(5);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_GT(b.slot_choice().heap_records, 300u);
  EXPECT_EQ(b.slot_choice().inline_records + b.slot_choice().heap_records, in.size());
  std::vector<Rec> out = walk(**t);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i].key, in[i].key) << i;
    ASSERT_EQ(out[i].payload, in[i].payload) << i;
    ASSERT_EQ(out[i].db, in[i].db) << i;
    ASSERT_EQ(out[i].expire, in[i].expire) << i;
  }
  // The builder is empty again and makes a second, independent table.
  b.add(1, "again", test::fake_payload(10, 'z'), -1);
  auto second = b.build(6);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(walk(**second).size(), 1u);
  EXPECT_EQ(walk(**t).size(), in.size());
}

TEST(TableBuilder, RefusesRecordsOutOfDbOrder) {
  TableBuilder b;
  for (int i = 0; i < 5000; ++i) b.add(2, "k" + std::to_string(i), test::fake_payload(20, 'a'), -1);
  b.add(1, "late", test::fake_payload(20, 'a'), -1);
  auto t = b.build(1);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("DB order"), std::string::npos) << t.status().message();
}

TEST(TableBuilder, EmptyKeyspaceMakesAValidEmptyTable) {
  TableBuilder b;
  auto t = b.build(1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->header.record_count, 0u);
  EXPECT_EQ((*t)->header.scripts_size, 0u);
  EXPECT_EQ((*t)->header.scripts_offset, 0u);
  EXPECT_TRUE(walk(**t).empty());
}

// The table's scripts region, decoded with proto/ functions alone.
table::Scripts walk_scripts(const Table& t) {
  auto bytes = t.bytes.span();
  auto h = table::decode_header(bytes.first(table::kHeaderSize), bytes.size());
  EXPECT_TRUE(h.ok()) << h.status().message();
  if (!h.ok()) return {};
  auto s = table::decode_scripts(*h, bytes.subspan(h->scripts_offset, h->scripts_size));
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : table::Scripts{};
}

// Shaped like a FUNCTION DUMP reply: opaque bytes ending in RDB version 10 and a CRC64.
std::string function_payload(const std::string& code) {
  return "\xf5" + code + std::string("\x0a\x00", 2) + "12345678";
}

// An RDB's empty collections are left out and counted (servers drop them at
// load; RESTORE refuses them), and the RDB header's version is the table's
// even when no key is left.
TEST(TableBuilder, EmptyCollectionsAreCountedNotStored) {
  TableBuilder b;
  b.set_source({{Engine::kValkey, 9, 1, 2}, table::SourceKind::kPsync, 5, "r", 80});
  b.add_rdb_value(0, "empty-list", rdb::kList, std::string("\x00", 1), 80, -1);
  b.add_rdb_value(0, "empty-hash2", rdb::kValkeyHash2, std::string("\x00", 1), 80, -1);
  auto t = b.build(1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->header.record_count, 0u);
  EXPECT_EQ((*t)->header.empty_skipped, 2u);
  EXPECT_EQ((*t)->header.rdb_version, 80u);
  EXPECT_EQ((*t)->header.engine, Engine::kValkey);
  EXPECT_EQ((*t)->header.server_version, "9.1.2");
}

// Records a conversion to an older server would lose part of are counted in
// the header with the first one's slot, from RDB values and DUMP payloads alike.
TEST(TableBuilder, CountsLossyRecordsAndTheFirstSlot) {
  TableBuilder b;
  b.set_source({{Engine::kValkey, 9, 1, 2}, table::SourceKind::kPsync, 5, "r", 80});
  auto hash2 = [](int64_t expiry) {  // one field, HASH_2: count, field, value, expiry
    std::string v = std::string("\x01\x01"
                                "f"
                                "\x01"
                                "v");
    for (int i = 0; i < 8; ++i) v.push_back(static_cast<char>((expiry >> (8 * i)) & 0xff));
    return v;
  };
  b.add_rdb_value(0, "plain", rdb::kValkeyHash2, hash2(-1), 80, -1);
  b.add_rdb_value(0, "ttl1", rdb::kValkeyHash2, hash2(4102444800000), 80, -1);
  std::string payload(dump::payload_size(hash2(5).size()), '\0');
  dump::write_payload(rdb::kValkeyHash2, hash2(5), 80, payload.data());
  b.add(0, "ttl2", payload, -1);
  auto t = b.build(1);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->header.lossy[0].count, 2u);
  EXPECT_EQ((*t)->header.lossy[0].first_slot, 1u);
  EXPECT_EQ((*t)->header.lossy[1].count, 0u);
}

TEST(TableBuilder, WritesFunctionsAndLuaScriptsBeforeTheSlots) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  b.add(0, "k", test::fake_payload(10, 'k'), -1);
  b.add(0, "heap", test::fake_payload(100000, 'h'), -1);
  const std::string payload = function_payload("#!lua name=lib1 ...");
  b.set_function_payload(payload, 2);
  b.add_lua_script("return 1");
  b.add_lua_script(std::string("return '\0'", 10));
  auto t = b.build(3);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const table::Header& h = (*t)->header;
  EXPECT_EQ(h.scripts_offset, table::kRegionAlign);
  EXPECT_LE(h.scripts_offset + h.scripts_size, h.slots_offset);
  EXPECT_GT(h.heap_size, 0u);
  EXPECT_EQ(h.scripts_size, 16u + 32 + 16 + 8 + 16 + 16);
  EXPECT_EQ((*t)->bytes.size(), h.total_size);
  EXPECT_EQ(walk(**t).size(), 2u);

  table::Scripts s = walk_scripts(**t);
  EXPECT_EQ(s.function_payload, payload);
  EXPECT_EQ(s.function_libraries, 2u);
  EXPECT_EQ(s.lua_scripts, (std::vector<std::string>{"return 1", std::string("return '\0'", 10)}));

  // A build releases them: the next epoch starts without.
  b.add(0, "k", test::fake_payload(10, 'k'), -1);
  auto next = b.build(4);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ((*next)->header.scripts_size, 0u);
  EXPECT_TRUE(walk_scripts(**next).empty());
}

TEST(TableBuilder, FunctionsWithoutKeysGiveTheTableTheirRdbVersion) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  b.set_function_payload(function_payload("#!lua name=only"), 1);
  auto t = b.build(9);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->header.record_count, 0u);
  EXPECT_EQ((*t)->header.rdb_version, 10u);
  EXPECT_EQ(walk_scripts(**t).function_libraries, 1u);
}

TEST(TableBuilder, RefusesAFunctionPayloadThatCannotBeOne) {
  TableBuilder none;
  none.set_function_payload(function_payload("x"), 0);  // no libraries
  EXPECT_FALSE(none.build(1).ok());
  TableBuilder tiny;
  tiny.set_function_payload("short", 1);
  auto t = tiny.build(1);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not a FUNCTION DUMP reply"), std::string::npos)
      << t.status().message();
  TableBuilder cleared;
  cleared.set_function_payload(function_payload("x"), 1);
  cleared.set_function_payload("", 1);  // an empty payload clears it
  auto c = cleared.build(1);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->header.scripts_size, 0u);
}

}  // namespace
}  // namespace rrs

namespace rrs {
namespace {

// Every single-byte corruption of a table either fails validation or (for a
// byte no decoder covers, such as slot padding) changes nothing that is
// delivered: decoding never crashes, never reads out of bounds, and never
// returns a record that differs from the original.
TEST(TableBuilder, SurvivesEveryByteFlipOfASmallTable) {
  TableBuilder b;
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kScan, 0, {}});
  b.add(0, "a", test::fake_payload(5, 'x'), -1);
  b.add(2, "bb", test::fake_payload(30, 'y'), 1700000000000);
  b.add(2, "heap", test::fake_payload(400, 'z'), -1);
  b.set_function_payload(function_payload("lib"), 1);
  b.add_lua_script("return 2");
  auto t = b.build(5);
  ASSERT_TRUE(t.ok());
  const std::vector<Rec> want = walk(**t);
  const table::Scripts want_scripts = walk_scripts(**t);
  auto bytes = (*t)->bytes.span();
  const table::Header h = (*t)->header;
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < table::kHeaderSize; ++i) offsets.push_back(i);
  for (uint64_t i = 0; i < h.dbdir_size; ++i) offsets.push_back(h.dbdir_offset + i);
  for (uint64_t i = 0; i < h.slots_size; ++i) offsets.push_back(h.slots_offset + i);
  for (uint64_t i = 0; i < h.heap_size; ++i) offsets.push_back(h.heap_offset + i);
  for (uint64_t i = 0; i < h.scripts_size; ++i) offsets.push_back(h.scripts_offset + i);
  for (uint64_t off : offsets) {
    bytes[off] ^= std::byte{0x5a};
    auto hd = table::decode_header(bytes.first(table::kHeaderSize), bytes.size());
    if (hd.ok()) {
      auto sc = table::decode_scripts(*hd, bytes.subspan(hd->scripts_offset, hd->scripts_size));
      if (sc.ok()) {
        EXPECT_EQ(sc->function_payload, want_scripts.function_payload) << "flip at " << off;
        EXPECT_EQ(sc->function_libraries, want_scripts.function_libraries) << "flip at " << off;
        EXPECT_EQ(sc->lua_scripts, want_scripts.lua_scripts) << "flip at " << off;
      }
      auto dbs = table::decode_db_directory(*hd, bytes.subspan(hd->dbdir_offset, hd->dbdir_size));
      if (dbs.ok()) {
        for (const table::DbEntry& db : *dbs)
          for (uint64_t i = db.first_slot; i < db.first_slot + db.key_count; ++i) {
            auto slot = bytes.subspan(hd->slot_offset(i), hd->slot_size);
            auto v = table::decode_slot(*hd, i, db.db, slot);
            if (!v.ok()) continue;
            if (v->kind == table::SlotKind::kHeap &&
                !table::verify_heap_record(
                     i, slot, *v, bytes.subspan(hd->heap_offset + v->heap_ref, v->data_len()))
                     .ok())
              continue;
            ASSERT_LT(i, want.size());
            EXPECT_EQ(v->key, want[i].key) << "flip at " << off;
            EXPECT_EQ(v->payload, want[i].payload) << "flip at " << off;
            EXPECT_EQ(v->expire_at_ms, want[i].expire) << "flip at " << off;
          }
      }
    }
    bytes[off] ^= std::byte{0x5a};
  }
}

// A streamed build hands its table over before the records, and the header
// in its bytes always describes records that are all there, intact.
TEST(TableBuilder, AStreamedTableIsReadableAsItGrows) {
  TableBuilder b;
  std::shared_ptr<Table> opened;
  b.stream({.epoch = 9,
            .keys_hint = 10000,
            .bytes_hint = 1u << 20,
            .room_factor = 1,
            .on_open = [&](const std::shared_ptr<Table>& t) {
              EXPECT_FALSE(opened) << "opened twice";
              opened = t;
            }});
  SourceInfo source{
      {Engine::kRedis, 7, 0, 15}, table::SourceKind::kPsync, 1234, std::string(40, 'a')};
  source.rdb_version = 10;
  source.stream_db = 11;
  b.set_source(source);
  b.set_function_payload(function_payload("#!lua name=lib1 ..."), 1);
  auto prefix_ok = [&](const Table& t) {
    auto bytes = t.bytes.span();
    auto h = table::decode_header(bytes.first(table::kHeaderSize), t.length());
    EXPECT_TRUE(h.ok()) << h.status().message();
    if (!h.ok()) return uint64_t{0};
    EXPECT_EQ(h->state, table::State::kBuilding);
    for (uint64_t i = 0; i < h->record_count; ++i) {
      auto slot = bytes.subspan(h->slot_offset(i), h->slot_size);
      auto v = table::decode_slot(*h, i, i < 6000 ? 0 : 3, slot);
      EXPECT_TRUE(v.ok()) << v.status().message();
      if (v.ok() && v->kind == table::SlotKind::kHeap) {
        EXPECT_TRUE(table::verify_heap_record(
                        i, slot, *v, bytes.subspan(h->heap_offset + v->heap_ref, v->data_len()))
                        .ok());
      }
    }
    return h->record_count;
  };
  uint64_t seen = 0;
  for (int i = 0; i < 9000; ++i) {
    const std::string payload = test::fake_payload(i % 1000 == 0 ? 70000 : 40, 'v');
    b.add(i < 6000 ? 0 : 3, "key:" + std::to_string(i), payload, -1);
    if (i == 4095) {
      ASSERT_TRUE(opened) << "not handed over once the slot size was chosen";
    }
    if (opened && i % 1000 == 999) {
      const uint64_t now = prefix_ok(*opened);
      EXPECT_GE(now, seen);
      EXPECT_GT(now + uint64_t{2} * 256, static_cast<uint64_t>(i)) << "progress lags";
      seen = now;
      EXPECT_FALSE(opened->complete());
    }
  }
  auto t = b.build(123);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->get(), opened.get()) << "the table handed over is the one completed";
  EXPECT_TRUE(opened->complete());
  EXPECT_TRUE(opened->streamed());
  const table::Header& h = opened->final_header();
  EXPECT_EQ(h.epoch, 9u);
  EXPECT_EQ(h.record_count, 9000u);
  EXPECT_EQ(h.db_count, 2u);
  EXPECT_EQ(h.source_offset, 1234u);
  EXPECT_EQ(h.source_stream_db, 11u);
  EXPECT_EQ(opened->length(), h.total_size);
  EXPECT_LT(h.total_size, opened->bytes.size()) << "the room beyond stays unused";
  EXPECT_EQ(walk(*opened).size(), 9000u);
  EXPECT_EQ(walk_scripts(*opened).function_libraries, 1u);
}

TEST(TableBuilder, AStreamedBuildOutOfRoomIsMarkedBroken) {
  TableBuilder b;
  std::shared_ptr<Table> opened;
  b.stream({.epoch = 5,
            .keys_hint = 0,
            .bytes_hint = 0,
            .room_factor = 1,
            .on_open = [&](const std::shared_ptr<Table>& t) { opened = t; }});
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kPsync, 1, std::string(40, 'a')});
  // No hint: room for 65,536 keys and a bit.
  for (int i = 0; i < 80000 && !b.out_of_room(); ++i)
    b.add(0, "k" + std::to_string(i), test::fake_payload(8, 'v'), -1);
  EXPECT_TRUE(b.out_of_room());
  auto t = b.build(5);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(t.status().message().find("slots reserved"), std::string::npos);
  ASSERT_TRUE(opened);
  auto h = table::decode_header(opened->bytes.span().first(table::kHeaderSize), opened->length());
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->state, table::State::kBroken);
  EXPECT_NE(h->broken_reason.find("slots reserved"), std::string::npos) << h->broken_reason;
  EXPECT_GT(h->record_count, 65536u);
  EXPECT_FALSE(opened->complete());
}

TEST(TableBuilder, AStreamedBuildRefusesFunctionsAfterTheFirstKeys) {
  TableBuilder b;
  std::shared_ptr<Table> opened;
  b.stream({.epoch = 5,
            .keys_hint = 10,
            .bytes_hint = 0,
            .room_factor = 1,
            .on_open = [&](const std::shared_ptr<Table>& t) { opened = t; }});
  b.set_source({{Engine::kRedis, 7, 0, 15}, table::SourceKind::kPsync, 1, std::string(40, 'a')});
  for (int i = 0; i < 5000; ++i) b.add(0, "k" + std::to_string(i), test::fake_payload(8, 'v'), -1);
  ASSERT_TRUE(opened);
  b.set_function_payload(function_payload("#!lua name=late ..."), 1);
  auto t = b.build(5);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().kind(), ErrorKind::kBadData);
  ASSERT_TRUE(opened);
  auto h = table::decode_header(opened->bytes.span().first(table::kHeaderSize), opened->length());
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->state, table::State::kBroken);
}

}  // namespace
}  // namespace rrs
