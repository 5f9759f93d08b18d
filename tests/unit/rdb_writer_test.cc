// The RDB writer against the repo's own RDB parser: what it writes must parse
// back to the same AUX fields, functions, DBs and keys, with each value byte
// equal to its DUMP payload's value and the checksum over every byte before
// it. (A real redis-server loading the writer's RDB is in the integration
// tests.)
#include "proto/rdb_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"

namespace rrs::rdb {
namespace {

constexpr uint16_t kVersion = 10;

// The DUMP payload of an RDB value.
std::string payload(uint8_t type, std::string_view value, uint16_t version = kVersion) {
  std::string p(dump::payload_size(value.size()), '\0');
  dump::write_payload(type, value, version, p.data());
  return p;
}

// An RDB string: length, then the bytes.
std::string rdb_string(std::string_view s) {
  std::string out;
  append_length(out, s.size());
  out += s;
  return out;
}

std::string string_value(std::string_view s) { return rdb_string(s); }

std::string set_value(const std::vector<std::string>& members) {
  std::string out;
  append_length(out, members.size());
  for (const std::string& m : members) out += rdb_string(m);
  return out;
}

uint64_t le64(std::string_view bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(bytes[i]);
  return v;
}

std::string le64_bytes(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// One parsed event, copied out of the parser's views.
struct Seen {
  EventKind kind = EventKind::kEnd;
  std::string a = {}, b = {};  // aux key/value, key/value, function code
  uint64_t n = 0, m = 0;       // db / type / db_size, expires_size
  int64_t expire = -1;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{kind " << static_cast<int>(s.kind) << " a '" << s.a.substr(0, 40) << "' b "
            << s.b.size() << "B n " << s.n << " m " << s.m << " expire " << s.expire << "}";
}

struct Parsed {
  std::vector<Seen> events;
  uint64_t checksum = 0;
  uint16_t version = 0;
  bool done = false;
  std::string rest;
};

Parsed parse(std::string_view rdb) {
  RdbParser p;
  p.feed(rdb);
  Parsed out;
  while (true) {
    auto ev = p.next();
    if (!ev.ok()) {
      ADD_FAILURE() << ev.status().message();
      break;
    }
    if (!*ev) break;
    const Event& e = **ev;
    switch (e.kind) {
      case EventKind::kAux:
        out.events.push_back({e.kind, std::string(e.aux_key), std::string(e.aux_value)});
        break;
      case EventKind::kSelectDb: out.events.push_back({e.kind, {}, {}, e.db}); break;
      case EventKind::kResizeDb:
        out.events.push_back({e.kind, {}, {}, e.db_size, e.expires_size});
        break;
      case EventKind::kRecord:
        out.events.push_back({e.kind, std::to_string(e.db) + ":" + std::string(e.key),
                              std::string(e.value), e.type, 0, e.expire_at_ms});
        break;
      case EventKind::kFunction:
        out.events.push_back({e.kind, std::string(e.function_code)});
        break;
      case EventKind::kModuleAux: out.events.push_back({e.kind, {}, {}, e.module_id}); break;
      case EventKind::kSlotImport: ADD_FAILURE() << "a SLOT_IMPORT the writer never writes"; break;
      case EventKind::kEnd:
        out.events.push_back({e.kind});
        out.checksum = e.checksum;
        break;
    }
  }
  out.version = p.version();
  out.done = p.done();
  out.rest = std::string(p.rest());
  return out;
}

// The value bytes of a DUMP payload: between the type byte and the trailer.
std::string value_of(const std::string& p) {
  return p.substr(1, p.size() - 1 - dump::kTrailerSize);
}

Seen record(uint32_t db, const std::string& key, const std::string& p, int64_t expire = -1) {
  return {EventKind::kRecord,
          std::to_string(db) + ":" + key,
          value_of(p),
          static_cast<uint8_t>(p[0]),
          0,
          expire};
}

// A writer's whole output, taken once at the end.
std::string all_of(RdbWriter& w) { return std::string(w.take()); }

TEST(RdbWriter, EmptyRdbIsHeaderEofAndChecksum) {
  RdbWriter w(kVersion);
  w.end();
  EXPECT_TRUE(w.ended());
  std::string rdb = all_of(w);
  std::string body = std::string("REDIS0010") + '\xff';
  EXPECT_EQ(rdb, body + le64_bytes(crc64(0, body.data(), body.size())));
  EXPECT_EQ(w.bytes(), rdb.size());
  EXPECT_EQ(w.pending(), 0u);

  Parsed p = parse(rdb);
  EXPECT_EQ(p.version, kVersion);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.events, std::vector<Seen>{Seen{EventKind::kEnd}});
}

TEST(RdbWriter, HeaderCarriesTheVersion) {
  RdbWriter w(12);
  w.end();
  std::string rdb = all_of(w);
  EXPECT_EQ(rdb.substr(0, kHeaderSize), "REDIS0012");
  EXPECT_EQ(parse(rdb).version, 12);
  RdbWriter valkey(80);
  valkey.end();
  rdb = all_of(valkey);
  EXPECT_EQ(rdb.substr(0, kHeaderSize), "VALKEY080");
  EXPECT_EQ(parse(rdb).version, 80);
}

// A payload goes only into a stream whose version is not older and in the
// same numbering, unless it predates the split (RDB 11 and older).
TEST(RdbWriter, PayloadsMustFitTheStreamsNumbering) {
  auto payload = [](uint16_t version) {
    std::string p(dump::payload_size(2), '\0');
    dump::write_payload(kString, std::string("\x01v", 2), version, p.data());
    return p;
  };
  RdbWriter valkey(80);
  EXPECT_TRUE(valkey.key("shared", payload(11), -1).ok());
  EXPECT_TRUE(valkey.key("own", payload(80), -1).ok());
  Status redis12 = valkey.key("redis", payload(12), -1);
  EXPECT_EQ(redis12.kind(), ErrorKind::kBadData);
  EXPECT_NE(redis12.message().find("other engine's numbering"), std::string::npos);
  RdbWriter redis(12);
  EXPECT_FALSE(redis.key("valkey", payload(80), -1).ok());
  RdbWriter old(10);
  EXPECT_FALSE(old.key("newer", payload(11), -1).ok());
}

TEST(RdbWriter, RoundTripThroughParser) {
  const std::string lib1 =
      "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)";
  const std::string lib2 =
      "#!lua name=lib2\nredis.register_function('f2', function() return 2 end)";
  const std::string s0 = payload(kString, string_value("hello"));
  const std::string s1 = payload(kString, string_value(std::string("\x00\xff\r\n", 4)));
  const std::string set = payload(kSet, set_value({"a", "bb", "ccc"}));
  const std::string s9 = payload(kString, string_value(std::string(200, 'z')));
  const std::string again = payload(kString, string_value("second visit"));

  RdbWriter w(kVersion);
  w.aux("redis-ver", "7.0.15");
  w.aux("redis-bits", "64");
  ASSERT_TRUE(w.functions(dump::function_restore_payload({lib1, lib2}, kVersion)).ok());
  w.select_db(0, 3, 1);
  ASSERT_TRUE(w.key("plain", s0, -1).ok());
  ASSERT_TRUE(w.key("ttl", s1, 1893456000123).ok());
  w.select_db(3, 1, 0);
  ASSERT_TRUE(w.key("set", set, -1).ok());
  w.select_db(9, 1, 1);
  ASSERT_TRUE(w.key(std::string("bin\0key", 7), s9, 4102444800000).ok());
  w.select_db(0, 1, 0);  // DB 0 again: no second RESIZEDB
  ASSERT_TRUE(w.key("late", again, -1).ok());
  w.end();
  std::string rdb = all_of(w);

  Parsed p = parse(rdb);
  std::vector<Seen> want = {
      {EventKind::kAux, "redis-ver", "7.0.15"},
      {EventKind::kAux, "redis-bits", "64"},
      {EventKind::kFunction, lib1},
      {EventKind::kFunction, lib2},
      {EventKind::kSelectDb, {}, {}, 0},
      {EventKind::kResizeDb, {}, {}, 3, 1},
      record(0, "plain", s0),
      record(0, "ttl", s1, 1893456000123),
      {EventKind::kSelectDb, {}, {}, 3},
      {EventKind::kResizeDb, {}, {}, 1, 0},
      record(3, "set", set),
      {EventKind::kSelectDb, {}, {}, 9},
      {EventKind::kResizeDb, {}, {}, 1, 1},
      record(9, std::string("bin\0key", 7), s9, 4102444800000),
      {EventKind::kSelectDb, {}, {}, 0},  // sized the first time only
      record(0, "late", again),
      {EventKind::kEnd},
  };
  EXPECT_EQ(p.events, want);
  EXPECT_EQ(p.version, kVersion);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.rest, "");
  // The checksum covers every byte before the 8 checksum bytes, EOF included.
  uint64_t crc = crc64(0, rdb.data(), rdb.size() - 8);
  EXPECT_EQ(p.checksum, crc);
  EXPECT_EQ(le64(std::string_view(rdb).substr(rdb.size() - 8)), crc);
  EXPECT_EQ(static_cast<uint8_t>(rdb[rdb.size() - 9]), kOpEof);
  EXPECT_EQ(w.bytes(), rdb.size());
}

TEST(RdbWriter, ExpiryIsEightLittleEndianBytesBeforeTheType) {
  const std::string p = payload(kString, string_value("v"));
  RdbWriter w(kVersion);
  std::string header(w.take());
  ASSERT_TRUE(w.key("k", p, 0x0102030405060708).ok());
  ASSERT_TRUE(w.key("z", p, 0).ok());  // 0 is an expiry (long past), not "none"
  ASSERT_TRUE(w.key("n", p, -1).ok());
  std::string body(w.take());
  std::string entry_k = std::string(1, '\x00') + rdb_string("k") + value_of(p);
  std::string entry_z = std::string(1, '\x00') + rdb_string("z") + value_of(p);
  std::string entry_n = std::string(1, '\x00') + rdb_string("n") + value_of(p);
  EXPECT_EQ(body, std::string(1, static_cast<char>(kOpExpireTimeMs)) +
                      le64_bytes(0x0102030405060708) + entry_k +
                      std::string(1, static_cast<char>(kOpExpireTimeMs)) + le64_bytes(0) + entry_z +
                      entry_n);
}

TEST(RdbWriter, TakeAfterEveryCallEqualsOneTakeAtTheEnd) {
  const std::string lib = "#!lua name=l\nredis.register_function('f', function() return 1 end)";
  const std::string fn = dump::function_restore_payload({lib}, kVersion);
  const std::string a = payload(kString, string_value(std::string(5000, 'a')));
  const std::string b = payload(kSet, set_value({"x", "y"}));
  auto write = [&](RdbWriter& w, bool take_each, std::string& taken) {
    auto step = [&] {
      if (!take_each) return;
      size_t pending = w.pending();
      std::string_view t = w.take();
      EXPECT_EQ(t.size(), pending);
      EXPECT_EQ(w.pending(), 0u);
      taken += t;
      EXPECT_EQ(w.bytes(), taken.size());
    };
    step();
    w.aux("redis-ver", "7.0.15");
    step();
    EXPECT_TRUE(w.functions(fn).ok());
    step();
    w.select_db(2, 2, 1);
    step();
    EXPECT_TRUE(w.key("a", a, 1893456000000).ok());
    step();
    EXPECT_TRUE(w.key("b", b, -1).ok());
    step();
    step();  // a take() with nothing new
    w.end();
    step();
    taken += w.take();
  };
  RdbWriter each(kVersion), once(kVersion);
  std::string pieces, whole;
  write(each, true, pieces);
  write(once, false, whole);
  EXPECT_EQ(pieces, whole);
  EXPECT_EQ(each.bytes(), whole.size());
  EXPECT_EQ(once.bytes(), whole.size());
  EXPECT_EQ(each.take(), "");  // nothing after the checksum
  Parsed p = parse(pieces);
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.checksum, crc64(0, pieces.data(), pieces.size() - 8));
}

TEST(RdbWriter, KeyOver64BytesUses14BitLength) {
  const std::string key(100, 'k');
  const std::string p = payload(kString, string_value("v"));
  RdbWriter w(kVersion);
  std::string header(w.take());
  ASSERT_TRUE(w.key(key, p, -1).ok());
  std::string body(w.take());
  ASSERT_GE(body.size(), 3u);
  EXPECT_EQ(static_cast<uint8_t>(body[1]), 0x40);  // 01xxxxxx: 14-bit, 100 = 0x0064
  EXPECT_EQ(static_cast<uint8_t>(body[2]), 100);
  EXPECT_EQ(body.substr(3, key.size()), key);

  w.end();
  Parsed parsed = parse(header + body + std::string(w.take()));
  ASSERT_EQ(parsed.events.size(), 2u);
  EXPECT_EQ(parsed.events[0], record(0, key, p));
}

TEST(RdbWriter, KeyOver16383BytesUses32BitLength) {
  std::string key(20000, '\0');
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<char>(i * 7);
  const std::string p = payload(kString, string_value(std::string(70000, 'v')));
  RdbWriter w(kVersion);
  std::string header(w.take());
  ASSERT_TRUE(w.key(key, p, -1).ok());
  std::string body(w.take());
  ASSERT_GE(body.size(), 6u);
  EXPECT_EQ(static_cast<uint8_t>(body[1]), kLen32Bit);  // then 20000 big-endian
  EXPECT_EQ(body.substr(2, 4), std::string("\x00\x00\x4e\x20", 4));
  EXPECT_EQ(body.substr(6, key.size()), key);

  w.end();
  Parsed parsed = parse(header + body + std::string(w.take()));
  ASSERT_EQ(parsed.events.size(), 2u);
  EXPECT_EQ(parsed.events[0], record(0, key, p));
}

TEST(RdbWriter, FunctionDumpWithoutLibrariesWritesNothing) {
  RdbWriter with(kVersion), without(kVersion);
  EXPECT_TRUE(with.functions("").ok());
  // What FUNCTION DUMP returns on a server without libraries: the trailer.
  EXPECT_TRUE(with.functions(dump::function_restore_payload({}, kVersion)).ok());
  with.end();
  without.end();
  EXPECT_EQ(with.take(), without.take());
}

TEST(RdbWriter, PayloadShorterThanElevenBytesIsBadData) {
  RdbWriter w(kVersion);
  std::string header(w.take());
  for (size_t n : {size_t{0}, size_t{1}, size_t{10}}) {
    std::string p = payload(kString, "").substr(0, n);
    Status s = w.key("k", p, -1);
    EXPECT_FALSE(s.ok()) << n;
    EXPECT_EQ(s.kind(), ErrorKind::kBadData) << n;
    EXPECT_EQ(w.pending(), 0u) << "a refused key writes nothing";
  }
  // Exactly 11 bytes: a type and an empty value.
  EXPECT_TRUE(w.key("k", payload(kString, ""), -1).ok());
  EXPECT_EQ(w.take(), std::string("\x00\x01k", 3));
}

TEST(RdbWriter, FunctionPayloadNotOfFunction2IsBadData) {
  RdbWriter w(kVersion);
  std::string header(w.take());
  const std::string lib = "#!lua name=l\nredis.register_function('f', function() return 1 end)";
  std::string fn = dump::function_restore_payload({lib}, kVersion);
  std::string key_dump = payload(kString, string_value("not a function"));
  std::string pre_ga = fn;
  pre_ga[0] = static_cast<char>(kOpFunctionPreGa);
  for (const std::string& bad : {key_dump, pre_ga, fn.substr(0, 5)}) {
    Status s = w.functions(bad);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::kBadData) << s.message();
    EXPECT_EQ(w.pending(), 0u);
  }
  // The good one: its FUNCTION2 entries, without the version and CRC.
  ASSERT_TRUE(w.functions(fn).ok());
  EXPECT_EQ(w.take(), fn.substr(0, fn.size() - dump::kTrailerSize));
}

// Below RDB 7 the stream has no AUX fields and no RESIZEDB, below RDB 5 no
// checksum after EOF, below RDB 3 expiries in seconds (EXPIRETIME): an RDB
// of the version as that version's Redis wrote it, which our parser reads.
TEST(RdbWriter, OldVersionsWriteOnlyWhatTheirFormatHas) {
  for (uint16_t version = 1; version <= 7; ++version) {
    SCOPED_TRACE(version);
    const std::string p = payload(kString, string_value("v"), version);
    RdbWriter w(version);
    w.aux("redis-ver", "2.4.17");
    w.select_db(0, 2, 1);
    ASSERT_TRUE(w.key("k", p, 2114380800000).ok());  // 2037-01-01, a whole second
    ASSERT_TRUE(w.key("n", p, -1).ok());
    w.end();
    const std::string rdb = all_of(w);
    EXPECT_EQ(w.bytes(), rdb.size());
    const std::string expiry = version < 3 ? "\xfd" + le64_bytes(2114380800).substr(0, 4)
                                           : "\xfc" + le64_bytes(2114380800000);
    const std::string entries = expiry + std::string(1, '\0') + rdb_string("k") + value_of(p) +
                                std::string(1, '\0') + rdb_string("n") + value_of(p);
    const std::string aux = version >= 7 ? "\xfa" + rdb_string("redis-ver") + rdb_string("2.4.17") +
                                               std::string("\xfe\x00\xfb\x02\x01", 5)
                                         : std::string("\xfe\x00", 2);
    std::string want = "REDIS000" + std::to_string(version) + aux + entries + "\xff";
    if (version >= 5) want += le64_bytes(crc64(0, want.data(), want.size()));
    EXPECT_EQ(rdb, want);

    Parsed parsed = parse(rdb);
    EXPECT_TRUE(parsed.done);
    EXPECT_EQ(parsed.rest, "");
    ASSERT_GE(parsed.events.size(), 4u);
    EXPECT_EQ(parsed.events[parsed.events.size() - 3], record(0, "k", p, 2114380800000));
  }
}

TEST(RdbWriter, OldVersionsRefuseWhatTheirFormatCannotHold) {
  const std::string p2 = payload(kString, string_value("v"), 2);
  RdbWriter w(2);
  std::string header(w.take());
  for (int64_t expire : {int64_t{2114380800001}, int64_t{2147483648000}}) {
    Status s = w.key("k", p2, expire);  // not a whole second; past 2^31 - 1 s
    EXPECT_EQ(s.kind(), ErrorKind::kBadData) << expire;
    EXPECT_NE(s.message().find("holds whole seconds"), std::string::npos) << s.message();
  }
  // A ziplist hash came with RDB 4.
  Status hash = w.key("h", payload(kHashZiplist, string_value("zl"), 2), -1);
  EXPECT_EQ(hash.kind(), ErrorKind::kBadData);
  EXPECT_NE(hash.message().find("not a value type of RDB 2"), std::string::npos) << hash.message();
  const std::string lib = "#!lua name=l\nredis.register_function('f', function() return 1 end)";
  Status fn = w.functions(dump::function_restore_payload({lib}, 2));
  EXPECT_EQ(fn.kind(), ErrorKind::kBadData);
  EXPECT_TRUE(w.functions("").ok());
  EXPECT_EQ(w.pending(), 0u) << "a refusal writes nothing";
}

}  // namespace
}  // namespace rrs::rdb
