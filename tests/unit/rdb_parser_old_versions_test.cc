// The RDB parser on hand-made RDBs of versions 1 to 5 (Redis 1.0 to 2.4 and
// the 2.6 development formats), each with what its version holds and
// nothing newer: the original five types (zset scores as strings),
// EXPIRETIME in seconds, then Redis 2.4's zipmap, ziplist and intset blobs
// (RDB 2), EXPIRETIME_MS (3), the ziplist hash (4) and the checksum after
// EOF (5). Each is fed whole, byte by byte and in random fragments; value
// types of a later version are refused, naming the version they came with,
// opcodes of a later version read as the servers read them.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "tests/support/rdb_bytes.h"
#include "tests/support/rdb_feed.h"

namespace rrs::rdb {
namespace {

using namespace std::string_literals;
using test::le;
using test::len;
using test::str;

std::string header(uint16_t version) {
  std::string h = "REDIS0000";
  h[7] = static_cast<char>('0' + version / 10);
  h[8] = static_cast<char>('0' + version % 10);
  return h;
}

// Redis 2.4's encodings, as its zipmap.c, ziplist.c and intset.c write them.
// A zipmap: <count> then per pair <len>field<len><free>value, then 0xff.
const std::string kZipmap = "\x02"
                            "\x02"
                            "f1"
                            "\x02\x00"
                            "v1"
                            "\x02"
                            "f2"
                            "\x02\x01"
                            "v2_"  // "v2", then one free byte
                            "\xff"s;
// A ziplist of "a", 7 (int16), "bc": zlbytes, zltail, zllen, entries, end.
const std::string kZiplistEntries = "\x00\x01"
                                    "a"
                                    "\x03\xc0\x07\x00"
                                    "\x04\x02"
                                    "bc"s;
const std::string kZiplist = le(11 + kZiplistEntries.size(), 4) + le(10 + 3 + 4, 4) + le(3, 2) +
                             kZiplistEntries + "\xff";
// An intset of 16-bit integers 1, 2, 3: encoding, length, contents.
const std::string kIntset = le(2, 4) + le(3, 4) + le(1, 2) + le(2, 2) + le(3, 2);

struct Key {
  uint8_t type;
  std::string key, value;
  int64_t expire_at_ms = -1;
};

// The keys an RDB of `version` can hold, at least one per type and expiry
// form that version has.
std::vector<Key> keys_of(uint16_t version) {
  std::vector<Key> keys = {
      {kString, "plain", str("value")},
      {kString, "int", "\xc1\x39\x30"s},  // int16 12345
      // LZF: a literal "a", then a back-reference of 9: "aaaaaaaaaa".
      {kString, "lzf", "\xc3"s + len(5) + len(10) + "\x00"s + "a\xe0\x00\x00"s},
      {kList, "list", len(3) + str("a") + "\xc0\x05"s + str(std::string(300, 'x'))},
      {kSet, "set", len(2) + str("m1") + str("m2")},
      // Scores as strings: "1.5", then 254 (+inf) and 253 (nan) and 255 (-inf)
      // with no digits.
      {kZset, "zset",
       len(4) + str("a") + "\x03"s + "1.5" + str("b") + "\xfe"s + str("c") + "\xfd"s + str("d") +
           "\xff"s},
      {kHash, "hash", len(2) + str("f1") + str("v1") + str("f2") + "\xc1\xf4\x01"s},
      {kString, "expires", str("in seconds"), 2114380800000},  // 2037-01-01
  };
  if (version >= 2) {
    keys.push_back({kHashZipmap, "zipmap", str(kZipmap)});
    keys.push_back({kListZiplist, "ziplist", str(kZiplist)});
    keys.push_back({kSetIntset, "intset", str(kIntset)});
    keys.push_back({kZsetZiplist, "zset-ziplist", str(kZiplist)});
  }
  if (version >= 3) keys.push_back({kString, "expires-ms", str("in ms"), 2114380800123});
  if (version >= 4) keys.push_back({kHashZiplist, "hash-ziplist", str(kZiplist)});
  return keys;
}

// The RDB: SELECTDB 0, the keys (an expiry in the form the version has),
// SELECTDB 3 and one more key, EOF, and from RDB 5 the checksum.
std::string rdb_of(uint16_t version, const std::vector<Key>& keys) {
  std::string rdb = header(version) + "\xfe\x00"s;
  for (const Key& k : keys) {
    if (k.expire_at_ms >= 0 && k.expire_at_ms % 1000 == 0)
      rdb += "\xfd"s + le(static_cast<uint64_t>(k.expire_at_ms / 1000), 4);
    else if (k.expire_at_ms >= 0)
      rdb += "\xfc"s + le(static_cast<uint64_t>(k.expire_at_ms), 8);
    rdb += static_cast<char>(k.type) + str(k.key) + k.value;
  }
  rdb += "\xfe\x03"s + static_cast<char>(kString) + str("in-db-3") + str("three") + "\xff";
  if (version >= kFirstVersionWithChecksum) rdb += le(crc64(0, rdb.data(), rdb.size()), 8);
  return rdb;
}

struct Outcome {
  std::vector<Event> events;  // views into `kept`
  std::vector<std::string> kept;
  std::string error;
  bool done = false;
  std::string rest;
  uint64_t checksum = 0;
};

// Feeds `rdb` in fragments of the sizes `next_size` gives; keeps a copy of
// every record's key and value.
template <typename SizeFn>
Outcome parse(std::string_view rdb, SizeFn next_size) {
  RdbParser p;
  Outcome o;
  o.error = test::feed_in_fragments(p, rdb, next_size, [&](Event e) {
    if (e.kind == EventKind::kRecord) {
      o.kept.push_back(std::string(e.key) + '\n' + std::string(e.value));
      e.key = {}, e.value = {};
    }
    if (e.kind == EventKind::kEnd) o.checksum = e.checksum;
    o.events.push_back(e);
  });
  if (!o.error.empty()) return o;
  o.done = p.done();
  o.rest = std::string(p.rest());
  return o;
}

Outcome parse_whole(std::string_view rdb) {
  return parse(rdb, [&] { return rdb.size(); });
}

// The records `o` saw, as "db type key expiry value".
std::vector<std::string> records(const Outcome& o) {
  std::vector<std::string> out;
  size_t k = 0;
  for (const Event& e : o.events)
    if (e.kind == EventKind::kRecord)
      out.push_back(std::to_string(e.db) + " " + std::to_string(e.type) + " " +
                    std::to_string(e.expire_at_ms) + " " + o.kept[k++]);
  return out;
}

std::vector<std::string> want_records(const std::vector<Key>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size() + 1);
  for (const Key& k : keys)
    out.push_back("0 " + std::to_string(k.type) + " " + std::to_string(k.expire_at_ms) + " " +
                  k.key + '\n' + k.value);
  out.push_back("3 0 -1 in-db-3\n" + str("three"));
  return out;
}

class OldVersions : public ::testing::TestWithParam<uint16_t> {};

TEST_P(OldVersions, EveryTypeOfTheVersionWholeBytewiseAndInFragments) {
  const uint16_t version = GetParam();
  const std::vector<Key> keys = keys_of(version);
  const std::string rdb = rdb_of(version, keys);
  std::mt19937 rng(version);
  std::vector<Outcome> runs;
  runs.push_back(parse_whole(rdb));
  runs.push_back(parse(rdb, [] { return 1; }));
  for (int i = 0; i < 20; ++i)
    runs.push_back(parse(rdb, [&] { return rng() % 2 ? rng() % 8 : rng() % 64; }));
  for (const Outcome& o : runs) {
    ASSERT_EQ(o.error, "");
    EXPECT_TRUE(o.done);
    EXPECT_EQ(o.rest, "");
    EXPECT_EQ(records(o), want_records(keys));
    ASSERT_FALSE(o.events.empty());
    EXPECT_EQ(o.events.back().kind, EventKind::kEnd);
    // The checksum is RDB 5's; before it the EOF opcode ends the file.
    EXPECT_EQ(o.checksum, version >= 5 ? crc64(0, rdb.data(), rdb.size() - 8) : 0u);
  }
}

// Before RDB 5 nothing of the RDB follows EOF: what does is the caller's
// (a loader of such a file never reads it), not a checksum.
TEST_P(OldVersions, BytesAfterEofAreTheCallersBeforeRdb5) {
  const uint16_t version = GetParam();
  std::string rdb = header(version) + "\xfe\x00\x00\x01k\x01v\xff"s;
  const std::string after = "12345678tail";
  if (version >= kFirstVersionWithChecksum) {
    Outcome o = parse_whole(rdb + after);
    EXPECT_NE(o.error.find("checksum mismatch"), std::string::npos) << o.error;
    Outcome waits = parse_whole(rdb + "1234567");  // a checksum cut short
    EXPECT_EQ(waits.error, "");
    EXPECT_FALSE(waits.done);
    Outcome unchecked = parse_whole(rdb + le(0, 8) + after);  // 0: not computed
    EXPECT_TRUE(unchecked.done);
    EXPECT_EQ(unchecked.rest, after);
    return;
  }
  Outcome o = parse(rdb + after, [] { return 3; });
  ASSERT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.rest, after);
  Outcome ends = parse_whole(rdb);
  EXPECT_TRUE(ends.done);
  EXPECT_EQ(ends.rest, "");
}

// What the sidecar makes of a record: a DUMP payload stamped with the
// file's version, which every server up to RDB 80 RESTOREs.
TEST_P(OldVersions, RecordsBecomeDumpPayloadsOfTheFilesVersion) {
  const uint16_t version = GetParam();
  RdbParser p;
  p.feed(rdb_of(version, keys_of(version)));
  auto select = p.next();
  ASSERT_TRUE(select.ok() && *select);
  auto ev = p.next();
  ASSERT_TRUE(ev.ok() && *ev) << (ev.ok() ? "" : ev.status().message());
  std::string payload(dump::payload_size((*ev)->value.size()), '\0');
  dump::write_payload((*ev)->type, (*ev)->value, p.version(), payload.data());
  EXPECT_EQ(dump::rdb_version(payload).value_or(0), version);
  EXPECT_EQ(payload.substr(0, 7), "\x00\x05value"s);
}

INSTANTIATE_TEST_SUITE_P(Rdb, OldVersions, ::testing::Values(1, 2, 3, 4, 5),
                         [](const auto& v) { return "v" + std::to_string(v.param); });

std::string error_of(uint16_t version, const std::string& body) {
  std::string rdb = header(version) + body + "\xff";
  if (version >= kFirstVersionWithChecksum) rdb += le(0, 8);
  Outcome whole = parse_whole(rdb);
  EXPECT_EQ(whole.error, parse(rdb, [] { return 1; }).error);
  return whole.error;
}

// A value type of a later version is refused in an older file, at its
// byte, naming the version it came with; in that version it parses. So is
// the 7.0 release-candidate FUNCTION, which only Redis 7.0 loads at all.
TEST(OldVersionsRefuse, WhatCameLater) {
  struct Case {
    uint16_t came_with;
    std::string body;  // the byte and what follows it
    std::string name;
  };
  const std::vector<Case> cases = {
      {2, "\x09\x01z"s + str(kZipmap), "hash zipmap (0x09)"},
      {2, "\x0a\x01z"s + str(kZiplist), "list ziplist (0x0a)"},
      {2, "\x0b\x01z"s + str(kIntset), "set intset (0x0b)"},
      {2, "\x0c\x01z"s + str(kZiplist), "zset ziplist (0x0c)"},
      {4, "\x0d\x01z"s + str(kZiplist), "hash ziplist (0x0d)"},
      {7, "\x0e\x01z\x01"s + str(kZiplist), "list quicklist (0x0e)"},
      {8, "\x05\x01z\x01"s + str("m") + le(0, 8), "zset2 (0x05)"},
      {10, "\xf6"s + str("lib") + str("LUA") + "\x00"s + str("return 1"),
       "opcode FUNCTION (7.0 release candidate format) (0xf6)"},
      {11, "\x14\x01z"s + str(le(7, 4) + le(0, 2) + "\xff"), "set listpack (0x14)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (uint16_t v = 1; v < c.came_with; ++v) {
      const std::string e = error_of(v, c.body);
      EXPECT_NE(e.find("RDB at byte 9: " + c.name + " in RDB version " + std::to_string(v) +
                       ": it came with RDB " + std::to_string(c.came_with)),
                std::string::npos)
          << e;
    }
    EXPECT_EQ(error_of(c.came_with, c.body), "");
  }
  // 0x08 is no type in any version.
  EXPECT_NE(error_of(1, "\x08\x01k\x01v"s).find("unknown type or opcode 0x08 in RDB version 1"),
            std::string::npos);
}

// The opcodes, though, are read in a file of every version, whichever
// version they came with: Redis's and Valkey's rdbLoad test the opcode
// byte and never the header's version.
TEST(OldVersionsAccept, OpcodesOfLaterVersions) {
  struct Case {
    std::string name;  // and the version it came with
    std::string body;  // the opcode and what follows it
  };
  const std::vector<Case> cases = {
      {"EXPIRETIME_MS (3)", "\xfc"s + le(2114380800123, 8) + "\x00\x01k\x01v"s},
      {"AUX (7)", "\xfa"s + str("redis-ver") + str("3.2.0")},
      {"RESIZEDB (7)", "\xfb\x01\x00"s},
      {"IDLE (9)", "\xf8\x05"s},
      {"FREQ (9)", "\xf9\x05"s},
      {"MODULE_AUX (9)", "\xf7"s + len(0x1234ull << 10) + len(kModuleUint) + len(2) +
                             len(kModuleString) + str("aux") + len(kModuleEof)},
      {"FUNCTION2 (10)", "\xf5"s + str("#!lua name=l\n")},
      {"SLOT_INFO (12)", "\xf4\x01\x01\x00"s},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (uint16_t v = 1; v <= kMaxRedisVersion; ++v) EXPECT_EQ(error_of(v, c.body), "") << v;
  }
  // An RDB 1 with AUX fields and an expiry in milliseconds: the events.
  const std::string rdb = header(1) + "\xfa"s + str("redis-ver") + str("2.0.0") + "\xfe\x00"s +
                          "\xfc"s + le(2114380800123, 8) + "\x00\x01k\x01v\xff"s;
  Outcome o = parse_whole(rdb);
  ASSERT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  ASSERT_EQ(o.events.size(), 4u);
  EXPECT_EQ(o.events[0].kind, EventKind::kAux);
  EXPECT_EQ(records(o), std::vector<std::string>{"0 0 2114380800123 k\n\x01v"});
}

TEST(OldVersionsRefuse, VersionZeroAndGarbage) {
  EXPECT_NE(parse_whole("REDIS0000\xff"s).error.find("RDB version 0"), std::string::npos);
  EXPECT_NE(parse_whole("REDIS 001\xff"s).error.find("does not start with REDIS"),
            std::string::npos);
}

// The table in rdb_format.h: each byte a version names comes with one
// version, and every newer version keeps it.
TEST(OldVersionsFormat, EachTypeComesWithOneVersionAndStays) {
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    const uint16_t first = first_version(byte, kMaxRedisVersion);
    if (type_name(byte, kMaxRedisVersion) == nullptr) {
      EXPECT_EQ(first, 0) << b;
      continue;
    }
    ASSERT_GE(first, 1) << b;
    ASSERT_LE(first, kMaxRedisVersion) << b;
    for (uint16_t v = 1; v <= kMaxRedisVersion; ++v)
      EXPECT_EQ(is_in_format(byte, v), v >= first) << b << " in " << v;
  }
  EXPECT_EQ(first_version(kValkeyHash2, 80), 80);
  EXPECT_EQ(first_version(kOpValkeySlotImport, 80), 80);
  EXPECT_EQ(first_version(kOpValkeySlotImport, 12), 0);
  EXPECT_TRUE(is_in_format(kHashZipmap, 80));
  EXPECT_FALSE(is_in_format(kHashMetadata, 80));  // Redis's, not Valkey's
}

}  // namespace
}  // namespace rrs::rdb
