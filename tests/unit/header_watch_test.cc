// Following a table's header while it is written (client/fetch/header_watch.h)
// and the DBs its records were found in before the DB directory existed
// (client/fetch/db_runs.h).
#include <gtest/gtest.h>

#include <array>

#include "client/fetch/db_runs.h"
#include "client/fetch/header_watch.h"

namespace rrs {
namespace {

table::Header building(uint64_t records, uint64_t heap) {
  table::Header h;
  h.epoch = 7;
  h.state = table::State::kBuilding;
  h.slot_size = 128;
  h.rdb_version = 12;
  h.server_version = "8.0.6";
  h.source_kind = table::SourceKind::kPsync;
  h.source_replid = "0123456789abcdef0123456789abcdef01234567";
  h.source_offset = 1000;
  EXPECT_TRUE(table::plan_streamed(h, 0, 10000, 1u << 20).ok());
  h.record_count = h.slot_count = records;
  h.slots_size = records * h.slot_size;
  h.heap_size = heap;
  return h;
}

TEST(HeaderWatch, ACopyIsIntactOnlyWhenItsCrcVerifies) {
  std::array<std::byte, table::kHeaderSize> bytes{};
  table::encode_header(building(5, 0), bytes);
  EXPECT_TRUE(header_intact(bytes));
  bytes[table::hdr::kRecordCount] ^= std::byte{1};  // caught mid-rewrite
  EXPECT_FALSE(header_intact(bytes));
  EXPECT_FALSE(header_intact(std::span(bytes).first(100)));
}

TEST(HeaderWatch, MoreRecordsAndThenReadyContinue) {
  const table::Header a = building(10, 64);
  table::Header b = building(300, 4096);
  EXPECT_TRUE(check_continues(a, a).ok());
  EXPECT_TRUE(check_continues(a, b).ok());
  b.state = table::State::kReady;
  b.db_count = 1;
  table::plan_completion(b);
  EXPECT_TRUE(check_continues(a, b).ok());
  EXPECT_TRUE(check_continues(b, b).ok());
  table::Header broken = a;
  broken.state = table::State::kBroken;
  broken.broken_reason = "master link lost";
  EXPECT_TRUE(check_continues(a, broken).ok());
}

TEST(HeaderWatch, WhatIsCompleteNeverShrinks) {
  const table::Header a = building(300, 4096);
  Status s = check_continues(a, building(299, 4096));
  EXPECT_EQ(s.kind(), ErrorKind::kBadData);
  EXPECT_NE(s.message().find("count of complete records changed from 300 to 299"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(check_continues(a, building(300, 4088)).ok());
}

TEST(HeaderWatch, WhatWasFixedAtPublicationStaysFixed) {
  const table::Header a = building(10, 0);
  auto changed = [&](auto edit) {
    table::Header b = building(20, 0);
    edit(b);
    return check_continues(a, b);
  };
  EXPECT_FALSE(changed([](table::Header& b) { b.epoch = 8; }).ok());
  EXPECT_FALSE(changed([](table::Header& b) { b.slot_size = 256; }).ok());
  EXPECT_FALSE(changed([](table::Header& b) { b.heap_offset += 4096; }).ok());
  EXPECT_FALSE(changed([](table::Header& b) { b.source_offset = 1; }).ok());
  EXPECT_FALSE(changed([](table::Header& b) { b.source_replid = "x"; }).ok());
  Status s = changed([](table::Header& b) { b.rdb_version = 11; });
  EXPECT_NE(s.message().find("RDB version changed from 12 to 11"), std::string::npos)
      << s.message();
}

TEST(HeaderWatch, ReadyAndBrokenAreFinal) {
  table::Header ready = building(20, 0);
  ready.state = table::State::kReady;
  ready.db_count = 1;
  table::plan_completion(ready);
  EXPECT_FALSE(check_continues(ready, building(20, 0)).ok());
  table::Header more = ready;
  more.record_count = more.slot_count = 21;
  EXPECT_FALSE(check_continues(ready, more).ok());
  table::Header broken = building(20, 0);
  broken.state = table::State::kBroken;
  broken.broken_reason = "out of room";
  EXPECT_FALSE(check_continues(broken, building(30, 0)).ok());
}

TEST(HeaderWatch, BrokenOffSaysHowFarAndWhy) {
  table::Header h = building(1200, 0);
  h.state = table::State::kBroken;
  h.broken_reason = "master link lost";
  Status s = broken_off(h);
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(s.message().find("broke off after 1200 records: master link lost; run rdma-client "
                             "again for the next snapshot"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(of_table_keys(h), "of the 1200 keys written so far");
  h.state = table::State::kReady;
  EXPECT_EQ(of_table_keys(h), "of 1200 keys");
}

std::vector<table::DbEntry> directory() {
  return {{0, 0, 100, 0}, {1, 100, 50, 0}, {3, 150, 10, 0}};
}

TEST(DbRuns, RecordsWhereTheDirectoryPutsThemPass) {
  DbRuns runs;
  for (uint64_t i = 0; i < 160; ++i) {
    if (i % 7 == 3) continue;  // failed validation, never noted
    EXPECT_TRUE(runs.note(i, i < 100 ? 0 : i < 150 ? 1 : 3));
  }
  EXPECT_TRUE(runs.check(directory()).ok());
  EXPECT_TRUE(DbRuns().check(directory()).ok());
}

TEST(DbRuns, ADbLowerThanTheOneBeforeIsRefused) {
  DbRuns runs;
  EXPECT_TRUE(runs.note(0, 1));
  EXPECT_TRUE(runs.note(1, 1));
  EXPECT_FALSE(runs.note(2, 0));
  EXPECT_TRUE(runs.note(3, 2));
}

TEST(DbRuns, ARunTheDirectoryPutsElsewhereFails) {
  DbRuns runs;
  for (uint64_t i = 0; i < 120; ++i) EXPECT_TRUE(runs.note(i, 0));  // 100..119 are DB 1's
  Status s = runs.check(directory());
  EXPECT_EQ(s.kind(), ErrorKind::kBadData);
  EXPECT_NE(s.message().find("records 0 to 119 said they were in DB 0"), std::string::npos)
      << s.message();
  DbRuns unknown;
  EXPECT_TRUE(unknown.note(0, 2));  // a DB the directory does not list
  EXPECT_FALSE(unknown.check(directory()).ok());
}

}  // namespace
}  // namespace rrs
