// The streaming RDB parser against hand-written RDBs covering every type and
// opcode of versions 6 to 12, fed whole, byte by byte and in random
// fragments; and against corrupt and truncated input. (Versions 1 to 5 are
// in rdb_parser_old_versions_test.cc.) (A real redis-server's
// RDB, checked against its own DUMP output, is in the integration tests.)
#include "proto/rdb_parser.h"
#include "tests/support/rdb_feed.h"

#include <gtest/gtest.h>

#include <random>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"

namespace rrs::rdb {
namespace {

// Writes an RDB by hand, remembering where each value starts and ends.
class RdbWriter {
 public:
  explicit RdbWriter(int version = 12) {
    out_ = version >= kFirstValkeyVersion ? "VALKEY0" : "REDIS00";
    out_ += static_cast<char>('0' + version / 10);
    out_ += static_cast<char>('0' + version % 10);
  }
  static RdbWriter with_header(std::string header) {
    RdbWriter w;
    w.out_ = std::move(header);
    return w;
  }
  RdbWriter& byte(uint8_t b) {
    out_.push_back(static_cast<char>(b));
    return *this;
  }
  RdbWriter& len(uint64_t n) {
    append_length(out_, n);
    return *this;
  }
  RdbWriter& str(std::string_view s) {
    len(s.size());
    out_ += s;
    return *this;
  }
  RdbWriter& raw(std::string_view s) {
    out_ += s;
    return *this;
  }
  RdbWriter& le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  // A key of `type`; value() then covers what is written until end_value().
  RdbWriter& key(uint8_t type, std::string_view k) {
    byte(type);
    str(k);
    value_start_ = out_.size();
    return *this;
  }
  std::string end_value() { return out_.substr(value_start_); }
  std::string finish(bool with_checksum = true) {
    byte(kOpEof);
    le(with_checksum ? crc64(0, out_.data(), out_.size()) : 0, 8);
    return out_;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
  size_t value_start_ = 0;
};

struct Seen {
  EventKind kind = EventKind::kEnd;
  std::string a = {}, b = {};  // key/value, aux key/value, function code
  uint64_t n = 0;              // db, type, module id
  int64_t expire = -1;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{kind " << static_cast<int>(s.kind) << " n " << s.n << " a '" << s.a << "' b "
            << s.b.size() << "B expire " << s.expire << "}";
}

Seen seen(const Event& e) {
  switch (e.kind) {
    case EventKind::kAux: return {e.kind, std::string(e.aux_key), std::string(e.aux_value)};
    case EventKind::kSelectDb: return {e.kind, {}, {}, e.db};
    case EventKind::kResizeDb:
      return {e.kind, std::to_string(e.db_size), std::to_string(e.expires_size), e.db};
    case EventKind::kRecord:
      return {e.kind, std::to_string(e.db) + ":" + std::string(e.key), std::string(e.value), e.type,
              e.expire_at_ms};
    case EventKind::kFunction: return {e.kind, std::string(e.function_code)};
    case EventKind::kModuleAux: return {e.kind, {}, {}, e.module_id};
    case EventKind::kSlotImport: return {e.kind, std::string(e.aux_value), {}, e.slot_ranges};
    case EventKind::kEnd: return {e.kind};
  }
  return {};
}

struct Outcome {
  std::vector<Seen> events;
  std::string error;  // empty: no error
  bool done = false;
  std::string rest;
};

// Feeds `rdb` in fragments of the sizes `next_size` returns.
template <typename SizeFn>
Outcome parse(std::string_view rdb, SizeFn next_size, Limits limits = {}) {
  RdbParser p(limits);
  Outcome o;
  o.error = test::feed_in_fragments(p, rdb, next_size,
                                    [&](const Event& e) { o.events.push_back(seen(e)); });
  if (!o.error.empty()) {
    auto again = p.next();  // errors are sticky
    EXPECT_FALSE(again.ok());
    return o;
  }
  o.done = p.done();
  o.rest = std::string(p.rest());
  return o;
}

Outcome parse_whole(std::string_view rdb, Limits limits = {}) {
  return parse(
      rdb, [&] { return rdb.size(); }, limits);
}

// Every type and opcode, with the values the parser must cut out.
struct Sample {
  std::string rdb;
  std::vector<Seen> want;
};

// Writes the sample, one family of types and opcodes at a time, in the
// order the RDB holds them, and what the parser must report for each.
struct SampleWriter {
  RdbWriter w{12};
  std::vector<Seen> want;

  // The key just written with w.key(type, key), and its value.
  void record(uint64_t type, const std::string& key, int64_t expire = -1, uint32_t db = 0) {
    want.push_back(
        {EventKind::kRecord, std::to_string(db) + ":" + key, w.end_value(), type, expire});
  }

  // Aux fields, both function forms, MODULE_AUX.
  void aux_and_functions() {
    w.byte(kOpAux).str("redis-ver").str("7.4.0");
    want.push_back({EventKind::kAux, "redis-ver", "7.4.0"});
    w.byte(kOpAux).str("redis-bits").raw("\xc0\x40");  // int8 encoding: 64
    want.push_back({EventKind::kAux, "redis-bits", "64"});
    w.byte(kOpAux).str("ctime").raw("\xc2").le(static_cast<uint32_t>(-5), 4);  // int32: -5
    want.push_back({EventKind::kAux, "ctime", "-5"});
    w.byte(kOpAux).str("lua").str("return 1");
    want.push_back({EventKind::kAux, "lua", "return 1"});
    w.byte(kOpFunction2)
        .str("#!lua name=lib1\nredis.register_function('f', function() return 1 end)");
    want.push_back({EventKind::kFunction,
                    "#!lua name=lib1\nredis.register_function('f', function() return 1 end)"});
    w.byte(kOpFunctionPreGa).str("old").str("LUA").len(1).str("a description").str("return 2");
    want.push_back({EventKind::kFunction, "#!LUA name=old\nreturn 2"});
    // MODULE_AUX: id, when-opcode UINT, when, then module opcodes up to EOF.
    w.byte(kOpModuleAux).len(0x1234567890).len(kModuleUint).len(2);
    w.len(kModuleUint).len(7).len(kModuleString).str("aux").len(kModuleDouble).le(0, 8);
    w.len(kModuleFloat).le(0, 4).len(kModuleSint).len(3).len(kModuleEof);
    want.push_back({EventKind::kModuleAux, {}, {}, 0x1234567890});
  }

  // SELECTDB 0 and RESIZEDB, then strings: expiries, int and LZF encodings,
  // LRU/LFU hints.
  void strings() {
    w.byte(kOpSelectDb).len(0);
    want.push_back({EventKind::kSelectDb, {}, {}, 0});
    w.byte(kOpResizeDb).len(40).len(2);
    want.push_back({EventKind::kResizeDb, "40", "2", 0});

    w.byte(kOpExpireTimeMs).le(1893456000123, 8);
    w.key(kString, "plain").str("value");
    record(kString, "plain", 1893456000123);
    w.byte(kOpExpireTime).le(1893456000, 4);
    // Key "12345" as int16; value LZF: literal 'a' then a back-reference of 9.
    w.byte(kString).raw("\xc1").le(12345, 2);
    size_t start = w.bytes().size();
    w.raw("\xc3").len(5).len(10).raw(std::string("\x00"
                                                 "a"
                                                 "\xe0\x00\x00",
                                                 5));
    want.push_back(
        {EventKind::kRecord, "0:12345", w.bytes().substr(start), kString, 1893456000000});
    w.byte(kOpIdle).len(1000).byte(kOpFreq).byte(5);
    w.key(kString, "int").raw("\xc0\x07");
    record(kString, "int");
    // An LZF key: literal runs only ("lzf-key" + "!").
    w.byte(kString).raw("\xc3").len(10).len(8).raw(std::string("\x06"
                                                               "lzf-key"
                                                               "\x00"
                                                               "!",
                                                               10));
    w.str("v");
    want.push_back({EventKind::kRecord, "0:lzf-key!", std::string("\x01v", 2), kString, -1});
  }

  // Lists, sets, zsets, hashes, module values, the blob encodings,
  // quicklists and hashes with field TTLs.
  void collections() {
    w.key(kList, "list").len(3).str("a").raw("\xc0\x05").str(std::string(300, 'x'));
    record(kList, "list");
    w.key(kSet, "set").len(2).str("m1").str("m2");
    record(kSet, "set");
    w.key(kZset, "zset1").len(3).str("a").byte(3).raw("1.5").str("b").byte(254).str("c").byte(253);
    record(kZset, "zset1");
    w.key(kHash, "hash").len(2).str("f1").str("v1").str("f2").raw("\xc1").le(500, 2);
    record(kHash, "hash");
    w.key(kZset2, "zset2").len(2).str("a").le(0x3ff8000000000000, 8).str("b").le(0, 8);
    record(kZset2, "zset2");
    w.key(kModule2, "mod").raw("\x81").le(0, 4).le(0x01020304, 4);  // 64-bit module id
    w.len(kModuleString).str("payload").len(kModuleUint).len(9).len(kModuleEof);
    record(kModule2, "mod");
    for (uint8_t blob : {kHashZipmap, kListZiplist, kSetIntset, kZsetZiplist, kHashZiplist,
                         kHashListpack, kZsetListpack, kSetListpack, kHashListpackExPreGa}) {
      std::string k = std::string("blob") + std::to_string(blob);
      w.key(blob, k).str(std::string(20 + blob, static_cast<char>(blob)));
      record(blob, k);
    }
    w.key(kHashListpackEx, "lpex").le(1893456000000, 8).str("listpack bytes");
    record(kHashListpackEx, "lpex");
    w.key(kListQuicklist, "ql1").len(2).str("ziplist1").str("ziplist2");
    record(kListQuicklist, "ql1");
    w.key(kListQuicklist2, "ql2")
        .len(2)
        .len(kQuicklistPacked)
        .str("listpack")
        .len(kQuicklistPlain)
        .str(std::string(9000, 'p'));
    record(kListQuicklist2, "ql2");
    w.key(kHashMetadataPreGa, "hfe-rc")
        .len(2)
        .len(0)
        .str("f")
        .str("v")
        .len(1893456000000)
        .str("g")
        .str("w");
    record(kHashMetadataPreGa, "hfe-rc");
    w.key(kHashMetadata, "hfe")
        .le(1893456000000, 8)
        .len(2)
        .len(0)
        .str("f")
        .str("v")
        .len(1)
        .str("g")
        .str("w");
    record(kHashMetadata, "hfe");
  }

  // Streams: listpacks, metadata, groups with a PEL and consumers.
  void streams() {
    auto stream_body = [&](uint8_t type) {
      bool v2 = type != kStreamListpacks, v3 = type == kStreamListpacks3;
      w.len(2);
      for (int i = 0; i < 2; ++i) w.str(std::string(16, 'I')).str("listpack entries");
      w.len(3).len(1700000000000).len(1);                        // length, last ID
      if (v2) w.len(1700000000000).len(0).len(0).len(0).len(3);  // first ID, max deleted, added
      w.len(2);                                                  // groups
      for (int g = 0; g < 2; ++g) {
        w.str("group" + std::to_string(g)).len(1700000000000).len(0);
        if (v2) w.len(2);
        w.len(2);  // PEL
        for (int e = 0; e < 2; ++e) w.raw(std::string(16, 'E')).le(1700000000500, 8).len(1);
        w.len(g == 0 ? 1 : 0);  // consumers
        if (g == 0) {
          w.str("alice").le(1700000000600, 8);
          if (v3) w.le(1700000000700, 8);
          w.len(2).raw(std::string(32, 'E'));
        }
      }
    };
    for (uint8_t type : {kStreamListpacks, kStreamListpacks2, kStreamListpacks3}) {
      std::string k = "stream" + std::to_string(type);
      w.key(type, k);
      stream_body(type);
      record(type, k);
    }
  }

  // A slot-info hint, then keys in DB 15 and in a DB past 65535.
  void other_dbs() {
    w.byte(kOpSlotInfo).len(42).len(10).len(1);
    w.byte(kOpSelectDb).len(15);
    want.push_back({EventKind::kSelectDb, {}, {}, 15});
    w.key(kString, "").str("");  // empty key, empty value
    record(kString, "", -1, 15);
    w.byte(kOpSelectDb).len(70000);
    want.push_back({EventKind::kSelectDb, {}, {}, 70000});
    w.key(kString, "far").str("db");
    record(kString, "far", -1, 70000);
  }
};

Sample every_type() {
  SampleWriter s;
  s.aux_and_functions();
  s.strings();
  s.collections();
  s.streams();
  s.other_dbs();
  std::string rdb = s.w.finish();
  s.want.push_back({EventKind::kEnd});
  return {rdb, s.want};
}

TEST(RdbParserTest, EveryTypeAndOpcodeWhole) {
  Sample s = every_type();
  Outcome o = parse_whole(s.rdb);
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.events, s.want);
  EXPECT_EQ(o.rest, "");
}

TEST(RdbParserTest, ByteByByte) {
  Sample s = every_type();
  Outcome o = parse(s.rdb, [] { return 1; });
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.events, s.want);
}

TEST(RdbParserTest, RandomFragments) {
  Sample s = every_type();
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    Outcome o = parse(s.rdb, [&] { return rng() % 2 ? rng() % 8 : rng() % 2048; });
    ASSERT_EQ(o.error, "") << "seed " << seed;
    ASSERT_TRUE(o.done) << "seed " << seed;
    ASSERT_EQ(o.events, s.want) << "seed " << seed;
  }
}

TEST(RdbParserTest, OlderVersionsAndNoChecksum) {
  for (int version : {6, 9, 10, 11}) {
    RdbWriter w(version);
    w.byte(kOpSelectDb).len(0).key(kString, "k").str("v");
    Outcome o = parse_whole(w.finish(/*with_checksum=*/false));
    EXPECT_EQ(o.error, "") << version;
    EXPECT_TRUE(o.done) << version;
    ASSERT_EQ(o.events.size(), 3u) << version;
  }
}

TEST(RdbParserTest, BytesAfterTheRdbAreLeftForTheCaller) {
  RdbWriter w;
  w.key(kString, "k").str("v");
  std::string rdb = w.finish() + "0123456789012345678901234567890123456789*1\r\n$4\r\nPING\r\n";
  Outcome o = parse(rdb, [] { return 7; });
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.rest.substr(0, 40), "0123456789012345678901234567890123456789");
}

TEST(RdbParserTest, ValueMatchesDumpPayload) {
  // write_payload turns a parsed value into exactly the DUMP format.
  RdbWriter w(10);
  w.key(kString, "k").str("hello");
  RdbParser p;
  p.feed(w.finish());
  auto ev = p.next();  // the record
  ASSERT_TRUE(ev.ok() && *ev);
  std::string payload(dump::payload_size((*ev)->value.size()), '\0');
  dump::write_payload((*ev)->type, (*ev)->value, p.version(), payload.data());
  std::string want = std::string("\x00\x05hello\x0a\x00", 9);
  uint64_t crc = crc64(0, want.data(), want.size());
  for (int i = 0; i < 8; ++i) want.push_back(static_cast<char>(crc >> (8 * i)));
  EXPECT_EQ(payload, want);
}

// --- What it refuses, and how it says so -----------------------------------

std::string error_of(const std::string& rdb, Limits limits = {}) {
  Outcome whole = parse_whole(rdb, limits);
  Outcome bytewise = parse(
      rdb, [] { return 1; }, limits);
  EXPECT_EQ(whole.error, bytewise.error);
  return whole.error;
}

// Redis's and Valkey's loaders read an opcode they know in an RDB of any
// version (rdbLoad tests the byte, never the header's version): an RDB 6
// with AUX fields, RESIZEDB, LRU/LFU hints, module AUX data, a function
// library and SLOT_INFO parses. The value types stay those of the header's
// version.
TEST(RdbParserTest, OpcodesAreReadInAnyVersion) {
  RdbWriter w(6);
  w.byte(kOpAux).str("redis-ver").str("3.0.7");
  w.byte(kOpAux).str("redis-bits").byte(0xc0).byte(64);  // an int8-encoded string
  w.byte(kOpAux).str("ctime").str("1700000000");
  w.byte(kOpModuleAux).len(0x1234567890ull << 10).len(kModuleUint).len(2);
  w.len(kModuleString).str("aux").len(kModuleEof);
  w.byte(kOpFunction2).str("#!lua name=lib\nserver.register_function('f', function() end)");
  w.byte(kOpSelectDb).len(0).byte(kOpResizeDb).len(2).len(1);
  w.byte(kOpSlotInfo).len(866).len(2).len(1);
  w.byte(kOpIdle).len(100).key(kString, "k").str("v");
  w.byte(kOpFreq).byte(5).byte(kOpExpireTimeMs).le(1893456000123, 8).key(kString, "e").str("x");
  const std::vector<Seen> want = {
      {EventKind::kAux, "redis-ver", "3.0.7"},
      {EventKind::kAux, "redis-bits", "64"},
      {EventKind::kAux, "ctime", "1700000000"},
      {EventKind::kModuleAux, {}, {}, 0x1234567890ull << 10},
      {EventKind::kFunction, "#!lua name=lib\nserver.register_function('f', function() end)"},
      {EventKind::kSelectDb, {}, {}, 0},
      {EventKind::kResizeDb, "2", "1", 0},
      {EventKind::kRecord, "0:k", "\x01v", kString},
      {EventKind::kRecord, "0:e", "\x01x", kString, 1893456000123},
      {EventKind::kEnd},
  };
  const std::string rdb = w.finish();
  for (auto size : {rdb.size(), size_t{1}, size_t{5}}) {
    Outcome o = parse(rdb, [&] { return size; });
    EXPECT_EQ(o.error, "") << size;
    EXPECT_TRUE(o.done) << size;
    EXPECT_EQ(o.events, want) << size;
  }
  for (uint8_t op : {kOpAux, kOpResizeDb, kOpExpireTimeMs, kOpIdle, kOpFreq, kOpModuleAux,
                     kOpFunction2, kOpSlotInfo})
    for (uint16_t v = kMinVersion; v <= kMaxRedisVersion; ++v)
      EXPECT_TRUE(is_loadable(op, v)) << int{op} << " in " << v;

  // A value type of a later version is still no type of this one.
  RdbWriter set_listpack(6);
  set_listpack.key(kSetListpack, "s").str("listpack");
  const std::string type_error = error_of(set_listpack.finish());
  EXPECT_NE(type_error.find("set listpack (0x14) in RDB version 6: it came with RDB 11"),
            std::string::npos)
      << type_error;
  // Nor is the 7.0 release-candidate FUNCTION before RDB 10: only Redis 7.0
  // loads it at all (7.2 on and Valkey refuse it in every version).
  RdbWriter pre_ga(9);
  pre_ga.byte(kOpFunctionPreGa).str("lib").str("LUA").len(0).str("code");
  const std::string pre_ga_error = error_of(pre_ga.finish());
  EXPECT_NE(pre_ga_error.find("(0xf6) in RDB version 9: it came with RDB 10"), std::string::npos)
      << pre_ga_error;
  // SLOT_IMPORT is Valkey's 243 only; in Redis's numbering it is no opcode.
  EXPECT_FALSE(is_loadable(kOpValkeySlotImport, 11));
  EXPECT_TRUE(is_loadable(kOpValkeySlotImport, 80));
}

TEST(RdbParserTest, ChecksumMismatch) {
  RdbWriter w;
  w.key(kString, "k").str("value");
  std::string rdb = w.finish();
  rdb[rdb.size() - 12] ^= 1;  // a value byte
  EXPECT_NE(error_of(rdb).find("checksum mismatch"), std::string::npos);
}

TEST(RdbParserTest, BadHeaders) {
  EXPECT_NE(error_of("RADIS0010xx").find("does not start with REDIS"), std::string::npos);
  EXPECT_NE(error_of("REDIS00a0xx").find("does not start with REDIS"), std::string::npos);
  EXPECT_NE(error_of("VALKEY8x0xx").find("or VALKEY and 3"), std::string::npos);
  std::string v13 = error_of(RdbWriter(13).finish());
  EXPECT_NE(v13.find("RDB version 13"), std::string::npos) << v13;
  EXPECT_NE(v13.find("Valkey's 80 (Valkey 9.1)"), std::string::npos) << v13;
  EXPECT_NE(error_of(RdbWriter(0).finish()).find("RDB version 0"), std::string::npos);
  EXPECT_NE(error_of(RdbWriter(81).finish()).find("RDB version 81 (VALKEY)"), std::string::npos);
  // The magic and the version must agree: each engine writes only its own.
  EXPECT_NE(error_of(RdbWriter::with_header("REDIS0080").finish()).find("neither engine"),
            std::string::npos);
  EXPECT_NE(error_of(RdbWriter::with_header("VALKEY011").finish()).find("neither engine"),
            std::string::npos);
}

// Valkey 9 (RDB 80): type 22 is its hash with field TTLs, opcode 243 its
// slot imports; in Redis's numbering 22 is the 7.4 pre-GA hash and 243 is
// nothing. The header decides.
TEST(RdbParserTest, ValkeyNumberingIsDecidedByTheHeader) {
  RdbWriter w(80);
  w.byte(kOpAux).str("valkey-ver").str("9.1.2");
  w.byte(kOpValkeySlotImport).str(std::string(40, 'j')).len(2).len(0).len(99).len(5000).len(5000);
  w.byte(kOpSelectDb).len(0);
  w.key(kValkeyHash2, "h2")
      .len(2)
      .str("f")
      .str("v")
      .le(UINT64_MAX, 8)
      .str("g")
      .str("w")
      .le(1893456000000, 8);
  std::string value = w.end_value();
  w.key(kSetListpack, "s").str("listpack");
  Outcome o = parse_whole(w.finish());
  ASSERT_EQ(o.error, "");
  ASSERT_EQ(o.events.size(), 6u);
  EXPECT_EQ(o.events[1], (Seen{EventKind::kSlotImport, std::string(40, 'j'), {}, 2}));
  EXPECT_EQ(o.events[3], (Seen{EventKind::kRecord, "0:h2", value, kValkeyHash2}));
  // Byte by byte too: every element of a HASH_2 resumes where it stopped.
  RdbWriter again(80);
  again.key(kValkeyHash2, "h2").len(1).str("f").str("v").le(5, 8);
  Outcome bytewise = parse(again.finish(), [] { return 1; });
  EXPECT_EQ(bytewise.error, "");
  EXPECT_TRUE(bytewise.done);

  // Redis's hash-with-TTL types are not Valkey's; 243 is no Redis opcode.
  RdbWriter redis_types(80);
  redis_types.key(kHashMetadata, "m").le(0, 8).len(0);
  EXPECT_NE(error_of(redis_types.finish()).find("unknown type or opcode 0x18 in RDB version 80"),
            std::string::npos);
  RdbWriter slot_import_in_redis(12);
  slot_import_in_redis.byte(kOpValkeySlotImport).str(std::string(40, 'j')).len(1).len(0).len(1);
  EXPECT_NE(error_of(slot_import_in_redis.finish()).find("unknown type or opcode 0xf3"),
            std::string::npos);
  RdbWriter bad_range(80);
  bad_range.byte(kOpValkeySlotImport).str(std::string(40, 'j')).len(1).len(7).len(16384);
  EXPECT_NE(error_of(bad_range.finish()).find("SLOT_IMPORT range 7-16384"), std::string::npos);
}

TEST(RdbParserTest, UnknownTypeNamesTheByteAndOffset) {
  RdbWriter w;
  w.byte(kOpSelectDb).len(0).byte(8).str("k").str("v");
  std::string e = error_of(w.finish());
  EXPECT_NE(e.find("unknown type or opcode 0x08"), std::string::npos) << e;
  EXPECT_NE(e.find("at byte 11"), std::string::npos) << e;  // 9 header + 2 SELECTDB
  RdbWriter w6;
  w6.key(kModulePreGa, "m").str("x");
  EXPECT_NE(error_of(w6.finish()).find("type 6"), std::string::npos);
}

TEST(RdbParserTest, MalformedFields) {
  RdbWriter bad_len;
  bad_len.key(kList, "l").byte(0x82);
  EXPECT_NE(error_of(bad_len.finish()).find("length prefix 0x82"), std::string::npos);

  RdbWriter bad_enc;
  bad_enc.key(kString, "k").byte(0xc4);
  EXPECT_NE(error_of(bad_enc.finish()).find("string encoding 4"), std::string::npos);

  RdbWriter encoded_count;  // a string encoding where a count belongs
  encoded_count.key(kSet, "s").byte(0xc0);
  EXPECT_NE(error_of(encoded_count.finish()).find("where a length belongs"), std::string::npos);

  RdbWriter container;
  container.key(kListQuicklist2, "q").len(1).len(3).str("x");
  EXPECT_NE(error_of(container.finish()).find("container 3"), std::string::npos);

  RdbWriter module_op;
  module_op.key(kModule2, "m").len(1).len(9);
  EXPECT_NE(error_of(module_op.finish()).find("module value opcode 9"), std::string::npos);

  RdbWriter aux_when;
  aux_when.byte(kOpModuleAux).len(1).len(kModuleSint).len(1);
  EXPECT_NE(error_of(aux_when.finish()).find("'when' opcode"), std::string::npos);

  RdbWriter lzf_lie;  // 2 compressed bytes cannot make a megabyte
  lzf_lie.byte(kString).raw("\xc3").len(2).len(1 << 20).raw("\x00x").str("v");
  EXPECT_NE(error_of(lzf_lie.finish()).find("LZF string claiming"), std::string::npos);

  RdbWriter lzf_bad;  // back-reference before the start of the output
  lzf_bad.byte(kString).raw("\xc3").len(3).len(5).raw("\x20\x05\x00").str("v");
  EXPECT_NE(error_of(lzf_bad.finish()), "");
}

TEST(RdbParserTest, LimitsStopLyingLengthsWithoutWaitingOrAllocating) {
  Limits small{.max_string_bytes = 1000, .max_value_bytes = 5000};
  RdbWriter big_string;  // declares 1 GiB, sends 3 bytes
  big_string.key(kString, "k").len(1u << 30).raw("abc");
  std::string e = error_of(big_string.bytes(), small);
  EXPECT_NE(e.find("max_string_bytes"), std::string::npos) << e;

  RdbWriter big_value;  // each element fits, the whole does not
  big_value.key(kList, "l").len(100);
  for (int i = 0; i < 100; ++i) big_value.str(std::string(100, 'x'));
  e = error_of(big_value.finish(), small);
  EXPECT_NE(e.find("max_value_bytes"), std::string::npos) << e;

  RdbWriter huge_count;  // 2^40 elements, then EOF: fails at once, no spinning
  huge_count.key(kSet, "s").len(1ull << 40);
  EXPECT_NE(error_of(huge_count.finish()), "");
}

TEST(RdbParserTest, TruncatedInputWaitsForMore) {
  Sample s = every_type();
  for (size_t cut : {size_t{0}, size_t{5}, size_t{9}, s.rdb.size() / 2, s.rdb.size() - 1}) {
    Outcome o = parse_whole(s.rdb.substr(0, cut));
    EXPECT_EQ(o.error, "") << cut;
    EXPECT_FALSE(o.done) << cut;
    EXPECT_TRUE(o.events.empty() || o.events.back().kind != EventKind::kEnd) << cut;
  }
}

TEST(RdbParserTest, LongCollectionsResumeWhereTheyStopped) {
  // 200,000 elements fed 7 bytes at a time: a parser that restarted the
  // value on every feed would walk it ~10^10 times and never finish here.
  RdbWriter w;
  w.key(kList, "long").len(200000);
  for (int i = 0; i < 200000; ++i) w.str("element");
  w.key(kStreamListpacks3, "s").len(0).len(0).len(0).len(0).len(0).len(0).len(0).len(0).len(0);
  w.len(1).str("g").len(0).len(0).len(0).len(50000);
  for (int i = 0; i < 50000; ++i) w.raw(std::string(16, 'E')).le(1, 8).len(1);
  w.len(1).str("c").raw(std::string(16, '\0')).len(50000);
  for (int i = 0; i < 50000; ++i) w.raw(std::string(16, 'E'));
  Outcome o = parse(w.finish(), [] { return 7; });
  EXPECT_EQ(o.error, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.events.size(), 3u);
}

}  // namespace
}  // namespace rrs::rdb
