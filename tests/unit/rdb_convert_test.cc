// rdb::convert_value and the listpack reader/writer against hand-built values:
// each conversion rule (proto/rdb_convert.h), byte for byte, plain and
// LZF-compressed; the needs_conversion / can_convert tables; and malformed
// input (every truncation, a byte too many, lying counts, bad listpacks,
// TTLs out of range), which must be kBadData and never crash. Every value a
// conversion gives must parse again with rdb::RdbParser under the target's
// version. Real servers loading the results are in
// tests/integration/rdb_convert_redis_test.cc.
#include "proto/rdb_convert.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "proto/listpack.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "tests/support/rdb_bytes.h"

namespace rrs::rdb {
namespace {

using namespace std::string_literals;
using test::le;
using test::len;
using test::str;

constexpr uint16_t kRedis70 = 10, kRedis72 = 11, kRedis74 = 12, kValkey9 = 80;
constexpr uint64_t kMaxFieldTtl = (uint64_t{1} << 48) - 1;

// An RDB string as RDB_ENC_LZF with literal runs only (a valid LZF stream).
std::string lzf_str(std::string_view plain) {
  std::string c;
  for (size_t i = 0; i < plain.size(); i += 32) {
    const std::string_view run = plain.substr(i, 32);
    c += static_cast<char>(run.size() - 1);
    c += run;
  }
  return "\xc3"s + len(c.size()) + len(plain.size()) + c;
}

std::string lp_of(const std::vector<std::string>& entries) {
  listpack::Writer w;
  for (const auto& e : entries) w.add(e);
  return *std::move(w).finish();
}

// The value as the record of key "k" in an RDB of `version`, parsed back.
void expect_parses(uint8_t type, const std::string& value, uint16_t version) {
  char header[kHeaderSize + 1];
  std::snprintf(header, sizeof header, is_valkey_numbering(version) ? "VALKEY%03u" : "REDIS%04u",
                static_cast<unsigned>(version));
  std::string rdb = header;
  rdb += static_cast<char>(type);
  rdb += str("k");
  rdb += value;
  rdb += static_cast<char>(kOpEof);
  rdb += std::string(8, '\0');  // no checksum
  RdbParser p;
  p.feed(rdb);
  auto ev = p.next();
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  ASSERT_TRUE(*ev && (*ev)->kind == EventKind::kRecord);
  EXPECT_EQ((*ev)->type, type);
  EXPECT_EQ((*ev)->value, value);
  auto end = p.next();
  ASSERT_TRUE(end.ok() && *end && (*end)->kind == EventKind::kEnd) << end.status().message();
}

// Converts, expects success, and checks the result parses as RDB `to`.
Converted convert_ok(uint8_t type, const std::string& value, uint16_t from, uint16_t to) {
  auto c = convert_value(type, value, from, to);
  EXPECT_TRUE(c.ok()) << c.status().message();
  if (!c.ok()) return {};
  expect_parses(c->type, c->value, to);
  return *c;
}

// Every proper prefix and the value plus a byte: kBadData, never a crash.
void expect_cuts_are_bad(uint8_t type, const std::string& value, uint16_t from, uint16_t to) {
  for (size_t n = 0; n < value.size(); ++n) {
    auto c = convert_value(type, value.substr(0, n), from, to);
    ASSERT_FALSE(c.ok()) << "cut to " << n << " of " << value.size() << " bytes";
    EXPECT_EQ(c.status().kind(), ErrorKind::kBadData) << c.status().message();
  }
  auto c = convert_value(type, value + "x", from, to);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().kind(), ErrorKind::kBadData);
  EXPECT_NE(c.status().message().find("after"), std::string::npos) << c.status().message();
}

void expect_bad(uint8_t type, const std::string& value, uint16_t from, uint16_t to,
                const std::string& says) {
  auto c = convert_value(type, value, from, to);
  ASSERT_FALSE(c.ok()) << "converted to type " << int{c->type};
  EXPECT_EQ(c.status().kind(), ErrorKind::kBadData) << c.status().message();
  EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status().message();
}

// --- listpack ---------------------------------------------------------------

TEST(ListpackTest, WriterEncodesAsListpackC) {
  // Header: 4 bytes total, 2 bytes count; each entry then its backlen.
  EXPECT_EQ(lp_of({}), "\x07\x00\x00\x00\x00\x00\xff"s);
  EXPECT_EQ(lp_of({"a"}), "\x0a\x00\x00\x00\x01\x00\x81\x61\x02\xff"s);
  EXPECT_EQ(lp_of({"7"}), "\x09\x00\x00\x00\x01\x00\x07\x01\xff"s);
  EXPECT_EQ(lp_of({"-1"}), "\x0a\x00\x00\x00\x01\x00\xdf\xff\x02\xff"s);        // 13-bit
  EXPECT_EQ(lp_of({"4096"}), "\x0b\x00\x00\x00\x01\x00\xf1\x00\x10\x03\xff"s);  // 16-bit
  // Not canonical integers stay strings.
  for (const char* s : {"01", "-0", "+1", " 1", "1 ", "", "9223372036854775808"}) {
    listpack::Writer w;
    w.add(s);
    const std::string lp = *std::move(w).finish();
    listpack::Reader r(lp);
    listpack::Entry e;
    ASSERT_TRUE(r.next(e));
    EXPECT_FALSE(e.is_int) << s;
    EXPECT_EQ(e.str, s);
  }
}

TEST(ListpackTest, RoundTripsIntegersAndStringsAtEveryBoundary) {
  std::vector<int64_t> ints = {0,
                               127,
                               128,
                               -1,
                               -4096,
                               4095,
                               -4097,
                               4096,
                               INT16_MIN,
                               INT16_MAX,
                               -8388608,
                               8388607,
                               -8388609,
                               8388608,
                               INT32_MIN,
                               INT32_MAX,
                               int64_t{INT32_MAX} + 1,
                               INT64_MIN,
                               INT64_MAX};
  // String sizes around the 6/12/32-bit length encodings and the 1-5 byte backlens.
  std::vector<size_t> sizes = {0,    1,    63,    64,    125,   126,   127,
                               4095, 4096, 16379, 16380, 16381, 16382, 70000};
  listpack::Writer w;
  for (int64_t v : ints) w.add_int(v);
  for (size_t n : sizes) w.add_string(std::string(n, 's'));
  w.add(std::to_string(INT64_MIN));
  const std::string lp = *std::move(w).finish();
  auto count = listpack::validate(lp);
  ASSERT_TRUE(count.ok()) << count.status().message();
  EXPECT_EQ(*count, ints.size() + sizes.size() + 1);
  listpack::Reader r(lp);
  listpack::Entry e;
  for (int64_t v : ints) {
    ASSERT_TRUE(r.next(e));
    EXPECT_TRUE(e.is_int);
    EXPECT_EQ(e.num, v);
  }
  for (size_t n : sizes) {
    ASSERT_TRUE(r.next(e));
    EXPECT_FALSE(e.is_int);
    EXPECT_EQ(e.str, std::string(n, 's'));
  }
  ASSERT_TRUE(r.next(e));
  EXPECT_EQ(e.num, INT64_MIN);
  EXPECT_FALSE(r.next(e));
}

TEST(ListpackTest, ManyEntriesSayUnknownCount) {
  listpack::Writer w;
  for (int i = 0; i < 70000; ++i) w.add_int(i % 100);
  const std::string lp = *std::move(w).finish();
  EXPECT_EQ(lp.substr(4, 2), "\xff\xff"s);
  auto count = listpack::validate(lp);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 70000u);
}

TEST(ListpackTest, ValidateRejectsWhatListpackCRejects) {
  const std::string good = lp_of({"a", "12", std::string(100, 'x')});
  ASSERT_TRUE(listpack::validate(good).ok());
  auto bad = [](const std::string& lp, const std::string& says) {
    auto r = listpack::validate(lp);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_EQ(r.status().kind(), ErrorKind::kBadData);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  for (size_t n = 0; n < good.size(); ++n) bad(good.substr(0, n), "");
  std::string s = good;
  s[0] = static_cast<char>(s[0] + 1);
  bad(s, "the header says");
  s = good;
  s.back() = 'x';
  bad(s, "no end marker");
  s = good;
  s[4] = 2;
  bad(s, "the header counts 2 entries, it has 3");
  s = good;
  s[6] = static_cast<char>(0xf5);
  bad(s, "unknown entry encoding");
  s = good;
  s[8] = 3;  // the backlen of "a"
  bad(s, "backlen");
  s = good;
  s[6] = static_cast<char>(0xbf);  // a 63-byte string: past the end of its room
  bad(s, "");
  bad("\x08\x00\x00\x00\x00\x00\xff\xff"s, "an end marker before the last byte");
  // A 32-bit string length near 4 GiB must not wrap.
  bad("\x0d\x00\x00\x00\x01\x00\xf0\xfb\xff\xff\xff\x00\xff"s, "past the end");
  // Unknown count (65535) is fine when the entries are right.
  s = good;
  s[4] = s[5] = static_cast<char>(0xff);
  EXPECT_TRUE(listpack::validate(s).ok());
}

// --- tables -----------------------------------------------------------------

TEST(RdbConvertTest, CanConvertInto10AndUpBetweenKnownVersions) {
  for (uint16_t from : std::initializer_list<uint16_t>{1, 5, 6, 9, 10, 11, 12, 80})
    for (uint16_t to : std::initializer_list<uint16_t>{10, 11, 12, 80})
      EXPECT_TRUE(can_convert(from, to)) << from << "->" << to;
  for (uint16_t to : std::initializer_list<uint16_t>{6, 8, 9})
    EXPECT_FALSE(can_convert(12, to)) << to;
  EXPECT_FALSE(can_convert(13, 12));
  EXPECT_FALSE(can_convert(12, 13));
  EXPECT_FALSE(can_convert(79, 12));
  EXPECT_FALSE(can_convert(80, 81));
  EXPECT_FALSE(can_convert(0, 10));
}

TEST(RdbConvertTest, NeedsConversionTable) {
  struct Row {
    uint8_t type;
    uint16_t from, to;
    bool needs;
  };
  const Row rows[] = {
      // 0-19 are the same bytes from RDB 10 on, either engine.
      {kString, 12, 10, false},
      {kSet, 80, 10, false},
      {kHashListpack, 80, 11, false},
      {kListQuicklist2, 12, 80, false},
      {kStreamListpacks2, 80, 10, false},
      {kHashZipmap, 6, 10, false},
      {kSetIntset, 80, 12, false},
      // Set listpack and stream v3: RDB 11 and up.
      {kSetListpack, 11, 10, true},
      {kSetListpack, 12, 11, false},
      {kSetListpack, 80, 10, true},
      {kSetListpack, 80, 12, false},
      {kStreamListpacks3, 12, 10, true},
      {kStreamListpacks3, 80, 11, false},
      {kStreamListpacks3, 11, 80, false},
      // Redis's field TTL hashes: RDB 12 (Redis) only.
      {kHashMetadata, 12, 12, false},
      {kHashListpackEx, 12, 12, false},
      {kHashMetadata, 12, 11, true},
      {kHashListpackEx, 12, 10, true},
      {kHashMetadataPreGa, 12, 80, true},
      {kHashListpackExPreGa, 12, 11, true},
      {kHashListpackEx, 12, 80, true},
      // Valkey's HASH_2: RDB 80 only.
      {kValkeyHash2, 80, 80, false},
      {kValkeyHash2, 80, 12, true},
      {kValkeyHash2, 80, 11, true},
      {kValkeyHash2, 80, 10, true},
      // Refused by convert_value: modules across versions, not types.
      {kModule2, 12, 11, true},
      {kModule2, 12, 12, false},
      {kModulePreGa, 10, 11, true},
      {8, 12, 10, true},
      {23, 80, 12, true},
      {kHashListpackEx, 80, 12, true},
      {26, 12, 11, true},
      {kOpAux, 12, 11, true},
  };
  for (const Row& r : rows)
    EXPECT_EQ(needs_conversion(r.type, r.from, r.to), r.needs)
        << "type " << int{r.type} << " from " << r.from << " to " << r.to;
}

TEST(RdbConvertTest, UnchangedTypesAreCopied) {
  const std::string value = str("hello");
  for (auto [from, to] : {std::pair<uint16_t, uint16_t>{12, 10}, {80, 12}, {10, 80}, {80, 80}}) {
    auto c = convert_ok(kString, value, from, to);
    EXPECT_EQ(c.type, kString);
    EXPECT_EQ(c.value, value);
    EXPECT_EQ(c.lost, kLossNone);
  }
  auto c = convert_ok(kHashListpackEx, le(0, 8) + str(lp_of({})), 12, 12);
  EXPECT_EQ(c.type, kHashListpackEx);
}

TEST(RdbConvertTest, RefusesWhatHasNoRule) {
  auto refused = [](uint8_t type, uint16_t from, uint16_t to, const std::string& says) {
    auto c = convert_value(type, str("x"), from, to);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().kind(), ErrorKind::kRefused) << c.status().message();
    EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status().message();
  };
  refused(kModule2, 12, 11, "module");
  refused(kModule2, 80, 12, "RDB 80 to RDB 12");
  refused(kString, 12, 9, "into RDB 10");
  refused(kString, 13, 12, "not an RDB version");
  expect_bad(26, str("x"), 12, 11, "type 26 is not a value type of RDB 12");
  expect_bad(24, str("x"), 80, 12, "type 24 is not a value type of RDB 80");
  expect_bad(kOpAux, str("x"), 12, 11, "not a value type");
}

// --- rule 2: set listpack into RDB 10 ----------------------------------------

std::string set_of(const std::vector<std::string>& members) {
  std::string s = len(members.size());
  for (const auto& m : members) s += str(m);
  return s;
}

TEST(RdbConvertTest, SetListpackBecomesAPlainSetForRdb10) {
  const std::vector<std::string> members = {"a",
                                            "7",
                                            "-12",
                                            "9223372036854775807",
                                            "0123",
                                            std::string(5000, 'z'),
                                            "-9223372036854775808"};
  const std::string lp = lp_of(members);
  for (const std::string& value : {str(lp), lzf_str(lp)}) {
    for (uint16_t from : std::initializer_list<uint16_t>{11, 12, 80}) {
      auto c = convert_ok(kSetListpack, value, from, kRedis70);
      EXPECT_EQ(c.type, kSet);
      EXPECT_EQ(c.value, set_of(members));
      EXPECT_EQ(c.lost, kLossNone);
    }
  }
  expect_cuts_are_bad(kSetListpack, str(lp), kRedis72, kRedis70);
  expect_cuts_are_bad(kSetListpack, lzf_str(lp), kRedis72, kRedis70);
  // Unknown count in the header: counted.
  std::string unknown = lp;
  unknown[4] = unknown[5] = static_cast<char>(0xff);
  EXPECT_EQ(convert_ok(kSetListpack, str(unknown), 12, 10).value, set_of(members));
}

TEST(RdbConvertTest, BadSetListpacksAreBadData) {
  const std::string lp = lp_of({"a", "b"});
  std::string lying = lp;
  lying[4] = 5;
  expect_bad(kSetListpack, str(lying), 12, 10, "the header counts 5 entries, it has 2");
  std::string backlen = lp;
  backlen[8] = 9;
  expect_bad(kSetListpack, str(backlen), 12, 10, "backlen");
  expect_bad(kSetListpack, "\xc0\x05"s, 12, 10, "listpack");  // an integer, not a listpack
  expect_bad(kSetListpack, "\xc5\x01"s, 12, 10, "string encoding 5");
  // LZF declaring more than it can hold, or corrupt.
  expect_bad(kSetListpack, "\xc3\x02\x43\xe8\x00\x61"s, 12, 10, "declared length");
  expect_bad(kSetListpack, "\xc3\x02\x07\x05\x61"s, 12, 10, "literal run");
  expect_bad(kSetListpack, "\xc3\x02\x00\x00\x61"s, 12, 10, "an LZF string of 0 bytes");
  expect_bad(kSetListpack, "\x80\xff\xff\xff\xff"s, 12, 10, "past the end");
}

// --- rule 3: stream v3 into RDB 10 ---------------------------------------------

struct StreamParts {
  std::string v3, v2;  // the same stream in both encodings
};

// One node, metadata, then `groups` groups each with a 2-entry PEL and
// `consumers` consumers with a 1-entry PEL.
StreamParts stream_of(int groups, int consumers) {
  const std::string id(16, '\x01');
  std::string head = len(1) + str(id) + str(lp_of({"1", "0", "f", "v"}));
  for (uint64_t i = 1; i <= 8; ++i) head += len(i);
  head += len(static_cast<uint64_t>(groups));
  StreamParts s{head, head};
  for (int g = 0; g < groups; ++g) {
    std::string group = str("group" + std::to_string(g)) + len(1) + len(2) + len(3) + len(2);
    for (int p = 0; p < 2; ++p)
      group += std::string(16, static_cast<char>('a' + p)) + le(7, 8) + len(1);
    group += len(static_cast<uint64_t>(consumers));
    s.v3 += group, s.v2 += group;
    for (int c = 0; c < consumers; ++c) {
      const std::string name = str("consumer" + std::to_string(c)), seen = le(1000 + c, 8);
      const std::string pel = len(1) + std::string(16, 'a');
      s.v3 += name + seen + le(2000 + c, 8) + pel;
      s.v2 += name + seen + pel;
    }
  }
  return s;
}

TEST(RdbConvertTest, StreamV3LosesActiveTimesForRdb10) {
  for (auto [groups, consumers] : {std::pair{0, 0}, {1, 0}, {1, 1}, {3, 2}}) {
    const StreamParts s = stream_of(groups, consumers);
    for (uint16_t from : std::initializer_list<uint16_t>{11, 12, 80}) {
      auto c = convert_ok(kStreamListpacks3, s.v3, from, kRedis70);
      EXPECT_EQ(c.type, kStreamListpacks2);
      EXPECT_EQ(c.value, s.v2) << groups << " groups, " << consumers << " consumers";
      EXPECT_EQ(c.lost, consumers > 0 && groups > 0 ? kLossConsumerActiveTime : kLossNone);
    }
  }
  expect_cuts_are_bad(kStreamListpacks3, stream_of(2, 2).v3, kRedis74, kRedis70);
}

TEST(RdbConvertTest, BadStreamsAreBadData) {
  std::string s = stream_of(1, 1).v3;
  // A node key that is not a 16-byte ID.
  std::string short_id = len(1) + str("abc") + s.substr(1 + 17);
  expect_bad(kStreamListpacks3, short_id, 12, 10, "not a 16-byte ID");
  // Counts that lie: more groups, consumers, PEL entries than there are.
  expect_bad(kStreamListpacks3, len(1000000) + s.substr(1), 12, 10, "stream");
  std::string many_groups = stream_of(0, 0).v3;
  many_groups.back() = 50;
  expect_bad(kStreamListpacks3, many_groups, 12, 10, "past the end");
  expect_bad(kStreamListpacks3, "\xc0\x01"s, 12, 10, "where a length belongs");
}

// --- rule 4: Redis hashes with field TTLs ------------------------------------

struct Field {
  std::string name, value;
  uint64_t expire_at;  // ms, 0: none
};

const std::vector<Field> kFields = {
    {"f1", "v1", 1700000000000},
    {"42", "-7", 0},
    {"big", std::string(300, 'b'), kMaxFieldTtl},
    {"f4", "", 1700000000123},
};

std::string lp_ex_of(const std::vector<Field>& fields) {
  listpack::Writer w;
  for (const Field& f : fields) {
    w.add(f.name);
    w.add(f.value);
    w.add_int(static_cast<int64_t>(f.expire_at));
  }
  return *std::move(w).finish();
}
std::string lp_pairs_of(const std::vector<Field>& fields) {
  listpack::Writer w;
  for (const Field& f : fields) w.add(f.name), w.add(f.value);
  return *std::move(w).finish();
}
uint64_t min_of(const std::vector<Field>& fields) {
  uint64_t m = 0;
  for (const Field& f : fields)
    if (f.expire_at && (!m || f.expire_at < m)) m = f.expire_at;
  return m;
}
// HASH_METADATA (24): min, count, per field relative TTL + 1, field, value.
std::string metadata_of(const std::vector<Field>& fields, bool lzf_values = false) {
  const uint64_t min = min_of(fields);
  std::string s = le(min, 8) + len(fields.size());
  for (const Field& f : fields) {
    s += len(f.expire_at ? f.expire_at - min + 1 : 0) + str(f.name);
    s += lzf_values && !f.value.empty() ? lzf_str(f.value) : str(f.value);
  }
  return s;
}
// 22 (7.4 RC): no min, absolute TTLs.
std::string metadata_pre_ga_of(const std::vector<Field>& fields) {
  std::string s = len(fields.size());
  for (const Field& f : fields) s += len(f.expire_at) + str(f.name) + str(f.value);
  return s;
}
// Valkey's HASH_2: count, per field: field, value, expiry (8 bytes, -1: none).
std::string hash2_of(const std::vector<Field>& fields) {
  std::string s = len(fields.size());
  for (const Field& f : fields)
    s += str(f.name) + str(f.value) + le(f.expire_at ? f.expire_at : ~uint64_t{0}, 8);
  return s;
}
std::string plain_hash_of(const std::vector<Field>& fields) {
  std::string s = len(fields.size());
  for (const Field& f : fields) s += str(f.name) + str(f.value);
  return s;
}

TEST(RdbConvertTest, RedisListpackExIntoValkeyIsHash2) {
  const std::string lp = lp_ex_of(kFields);
  for (const std::string& value : {le(min_of(kFields), 8) + str(lp), le(0, 8) + lzf_str(lp)}) {
    auto c = convert_ok(kHashListpackEx, value, kRedis74, kValkey9);
    EXPECT_EQ(c.type, kValkeyHash2);
    EXPECT_EQ(c.value, hash2_of(kFields));
    EXPECT_EQ(c.lost, kLossNone);
  }
  auto pre_ga = convert_ok(kHashListpackExPreGa, str(lp), kRedis74, kValkey9);
  EXPECT_EQ(pre_ga.type, kValkeyHash2);
  EXPECT_EQ(pre_ga.value, hash2_of(kFields));
  // No TTL left: a listpack hash, which Valkey 8 and 9 both load.
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  auto c = convert_ok(kHashListpackEx, le(0, 8) + str(lp_ex_of(none)), kRedis74, kValkey9);
  EXPECT_EQ(c.type, kHashListpack);
  EXPECT_EQ(c.value, str(lp_pairs_of(none)));
  EXPECT_EQ(c.lost, kLossNone);
  expect_cuts_are_bad(kHashListpackEx, le(0, 8) + str(lp), kRedis74, kValkey9);
  expect_cuts_are_bad(kHashListpackExPreGa, lzf_str(lp), kRedis74, kValkey9);
}

TEST(RdbConvertTest, RedisListpackExIntoRdb11IsAListpackHash) {
  const std::string lp = lp_ex_of(kFields);
  for (uint16_t to : {kRedis70, kRedis72}) {
    auto c = convert_ok(kHashListpackEx, le(1, 8) + str(lp), kRedis74, to);
    EXPECT_EQ(c.type, kHashListpack);
    EXPECT_EQ(c.value, str(lp_pairs_of(kFields)));
    EXPECT_EQ(c.lost, kLossFieldTtls);
    auto rc = convert_ok(kHashListpackExPreGa, lzf_str(lp), kRedis74, to);
    EXPECT_EQ(rc.value, c.value);
  }
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  EXPECT_EQ(convert_ok(kHashListpackEx, le(0, 8) + str(lp_ex_of(none)), 12, 11).lost, kLossNone);
  expect_cuts_are_bad(kHashListpackEx, le(0, 8) + str(lp), kRedis74, kRedis72);
}

// What the server counts in the table header, and what each target loses.
TEST(RdbConvertTest, LossesAtOldestAreWhatRdb10WouldLose) {
  const std::string with_ttls = le(1, 8) + str(lp_ex_of(kFields));
  EXPECT_EQ(losses_at_oldest(kHashListpackEx, with_ttls, kRedis74), kLossFieldTtls);
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  EXPECT_EQ(losses_at_oldest(kHashListpackEx, le(0, 8) + str(lp_ex_of(none)), kRedis74), kLossNone);
  EXPECT_EQ(losses_at_oldest(kStreamListpacks3, stream_of(1, 1).v3, kRedis72),
            kLossConsumerActiveTime);
  EXPECT_EQ(losses_at_oldest(kStreamListpacks3, stream_of(1, 0).v3, kValkey9), kLossNone);
  EXPECT_EQ(losses_at_oldest(kString, str("x"), kRedis74), kLossNone);
  EXPECT_EQ(losses_at_oldest(kHashListpackEx, "\x01", kRedis74), kLossNone) << "malformed: none";

  EXPECT_EQ(losses_into(kRedis70), kLossFieldTtls | kLossConsumerActiveTime);
  EXPECT_EQ(losses_into(kRedis72), kLossFieldTtls);
  EXPECT_EQ(losses_into(kRedis74), kLossNone);
  EXPECT_EQ(losses_into(kValkey9), kLossNone);
  EXPECT_STREQ(loss_key(0), "field_ttls");
  EXPECT_STREQ(loss_key(1), "active_times");
}

TEST(RdbConvertTest, BadListpackExIsBadData) {
  listpack::Writer two;
  two.add("f"), two.add("v");
  expect_bad(kHashListpackEx, le(0, 8) + str(*std::move(two).finish()), 12, 80,
             "not field, value, TTL triplets");
  listpack::Writer text_ttl;
  text_ttl.add("f"), text_ttl.add("v"), text_ttl.add_string("soon");
  expect_bad(kHashListpackEx, le(0, 8) + str(*std::move(text_ttl).finish()), 12, 11,
             "a field TTL that is not an integer");
  for (int64_t ttl : {int64_t{-1}, static_cast<int64_t>(kMaxFieldTtl + 1)}) {
    listpack::Writer w;
    w.add("f"), w.add("v"), w.add_int(ttl);
    expect_bad(kHashListpackEx, le(0, 8) + str(*std::move(w).finish()), 12, 80,
               "a field TTL that is not an integer from 0");
  }
  expect_bad(kHashListpackEx, le(0, 8) + str("not a listpack"), 12, 80, "listpack");
}

TEST(RdbConvertTest, RedisMetadataIntoValkeyIsHash2) {
  for (bool lzf : {false, true}) {
    auto c = convert_ok(kHashMetadata, metadata_of(kFields, lzf), kRedis74, kValkey9);
    EXPECT_EQ(c.type, kValkeyHash2);
    EXPECT_EQ(c.lost, kLossNone);
    if (!lzf) {
      EXPECT_EQ(c.value, hash2_of(kFields));
    }
  }
  auto pre_ga = convert_ok(kHashMetadataPreGa, metadata_pre_ga_of(kFields), kRedis74, kValkey9);
  EXPECT_EQ(pre_ga.type, kValkeyHash2);
  EXPECT_EQ(pre_ga.value, hash2_of(kFields));
  // Only fields without a TTL (a 7.4 RC hash can be so): a plain hash.
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  auto c = convert_ok(kHashMetadataPreGa, metadata_pre_ga_of(none), kRedis74, kValkey9);
  EXPECT_EQ(c.type, kHash);
  EXPECT_EQ(c.value, plain_hash_of(none));
  expect_cuts_are_bad(kHashMetadata, metadata_of(kFields, true), kRedis74, kValkey9);
  expect_cuts_are_bad(kHashMetadataPreGa, metadata_pre_ga_of(kFields), kRedis74, kValkey9);
}

TEST(RdbConvertTest, RedisMetadataIntoRdb11IsAPlainHash) {
  for (uint16_t to : {kRedis70, kRedis72}) {
    auto c = convert_ok(kHashMetadata, metadata_of(kFields), kRedis74, to);
    EXPECT_EQ(c.type, kHash);
    EXPECT_EQ(c.value, plain_hash_of(kFields));
    EXPECT_EQ(c.lost, kLossFieldTtls);
    auto rc = convert_ok(kHashMetadataPreGa, metadata_pre_ga_of(kFields), kRedis74, to);
    EXPECT_EQ(rc.value, plain_hash_of(kFields));
  }
  // LZF strings are copied as they are.
  auto c = convert_ok(kHashMetadata, metadata_of(kFields, true), kRedis74, kRedis72);
  EXPECT_NE(c.value.find("\xc3"s), std::string::npos);
  expect_cuts_are_bad(kHashMetadata, metadata_of(kFields, true), kRedis74, kRedis70);
}

TEST(RdbConvertTest, BadRedisMetadataIsBadData) {
  expect_bad(kHashMetadata, le(kMaxFieldTtl + 2, 8) + len(0), 12, 80, "past 2^48");
  // A relative TTL that lands past EB_EXPIRE_TIME_MAX, and a huge one.
  expect_bad(kHashMetadata, le(1000, 8) + len(1) + len(kMaxFieldTtl) + str("f") + str("v"), 12, 80,
             "past 2^48 - 1 ms");
  expect_bad(kHashMetadata, le(1000, 8) + len(1) + len(~uint64_t{0}) + str("f") + str("v"), 12, 11,
             "past 2^48 - 1 ms");
  expect_bad(kHashMetadataPreGa, len(1) + len(kMaxFieldTtl + 1) + str("f") + str("v"), 12, 80,
             "past 2^48 - 1 ms");
  // A count that lies.
  expect_bad(kHashMetadata, le(5, 8) + len(1000000) + len(1) + str("f") + str("v"), 12, 11,
             "past the end");
  // A string encoding where the TTL's length belongs.
  expect_bad(kHashMetadata, le(5, 8) + len(1) + "\xc0\x01"s + str("v"), 12, 11,
             "where a length belongs");
  // A corrupt LZF field is found even though it is copied as it stands.
  expect_bad(kHashMetadata, le(5, 8) + len(1) + len(0) + "\xc3\x02\x05\x1f\x61"s + str("v"), 12, 11,
             "lzf");
}

// --- rule 5: Valkey's HASH_2 ---------------------------------------------------

TEST(RdbConvertTest, ValkeyHash2IntoRedisIsMetadata) {
  auto c = convert_ok(kValkeyHash2, hash2_of(kFields), kValkey9, kRedis74);
  EXPECT_EQ(c.type, kHashMetadata);
  EXPECT_EQ(c.value, metadata_of(kFields));
  EXPECT_EQ(c.lost, kLossNone);
  // And back: the same bytes.
  auto back = convert_ok(c.type, c.value, kRedis74, kValkey9);
  EXPECT_EQ(back.type, kValkeyHash2);
  EXPECT_EQ(back.value, hash2_of(kFields));
  // No field with an expiry: a plain hash.
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  auto plain = convert_ok(kValkeyHash2, hash2_of(none), kValkey9, kRedis74);
  EXPECT_EQ(plain.type, kHash);
  EXPECT_EQ(plain.value, plain_hash_of(none));
  expect_cuts_are_bad(kValkeyHash2, hash2_of(kFields), kValkey9, kRedis74);
}

TEST(RdbConvertTest, ValkeyExpiryZeroGoesAsOneMs) {
  // Redis reads an expire_at of 0 as "no TTL": a field long expired stays expired.
  const std::string v = len(2) + str("old") + str("x") + le(0, 8) + str("new") + str("y") +
                        le(5000, 8);
  auto c = convert_ok(kValkeyHash2, v, kValkey9, kRedis74);
  EXPECT_EQ(c.type, kHashMetadata);
  EXPECT_EQ(c.value,
            le(1, 8) + len(2) + len(1) + str("old") + str("x") + len(5000) + str("new") + str("y"));
}

TEST(RdbConvertTest, ValkeyHash2IntoRdb11IsAPlainHash) {
  for (uint16_t to : {kRedis70, kRedis72}) {
    auto c = convert_ok(kValkeyHash2, hash2_of(kFields), kValkey9, to);
    EXPECT_EQ(c.type, kHash);
    EXPECT_EQ(c.value, plain_hash_of(kFields));
    EXPECT_EQ(c.lost, kLossFieldTtls);
  }
  std::vector<Field> none = kFields;
  for (Field& f : none) f.expire_at = 0;
  EXPECT_EQ(convert_ok(kValkeyHash2, hash2_of(none), kValkey9, kRedis70).lost, kLossNone);
  expect_cuts_are_bad(kValkeyHash2, hash2_of(kFields), kValkey9, kRedis72);
}

TEST(RdbConvertTest, ValkeyExpiriesRedisCannotHold) {
  const std::string far = len(1) + str("f") + str("v") + le(kMaxFieldTtl + 1, 8);
  auto c = convert_value(kValkeyHash2, far, kValkey9, kRedis74);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().kind(), ErrorKind::kRefused) << c.status().message();
  EXPECT_NE(c.status().message().find("past the 2^48 - 1 ms"), std::string::npos);
  // Into RDB 11 the expiry is dropped anyway.
  EXPECT_EQ(convert_ok(kValkeyHash2, far, kValkey9, kRedis72).lost, kLossFieldTtls);
  expect_bad(kValkeyHash2, len(1) + str("f") + str("v") + le(static_cast<uint64_t>(-2), 8), 80, 12,
             "a field expiry of -2 ms");
  expect_bad(kValkeyHash2, len(3) + str("f") + str("v") + le(1, 8), 80, 11, "past the end");
}

// --- output cap ------------------------------------------------------------------

TEST(RdbConvertTest, OutputAboveTheCapIsBadData) {
  std::vector<std::string> members(1000);
  for (size_t i = 0; i < members.size(); ++i) members[i] = std::to_string(i * 1000003);
  const std::string value = str(lp_of(members));
  auto whole = convert_value(kSetListpack, value, 12, 10);
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(convert_value(kSetListpack, value, 12, 10, whole->value.size()).ok());
  auto capped = convert_value(kSetListpack, value, 12, 10, whole->value.size() - 1);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().kind(), ErrorKind::kBadData);
  EXPECT_NE(capped.status().message().find("max_output_bytes"), std::string::npos)
      << capped.status().message();
  // An LZF string declaring more than the cap is refused before decompressing.
  auto lzf = convert_value(kSetListpack, lzf_str(lp_of(members)), 12, 10, 100);
  ASSERT_FALSE(lzf.ok());
  EXPECT_NE(lzf.status().message().find("the limit is 100"), std::string::npos)
      << lzf.status().message();
}

TEST(RdbConvertTest, LossNames) {
  EXPECT_EQ(loss_names(kLossNone), "nothing");
  EXPECT_EQ(loss_names(kLossFieldTtls | kLossConsumerActiveTime),
            "hash field TTLs, stream consumers' active times");
}

}  // namespace
}  // namespace rrs::rdb
