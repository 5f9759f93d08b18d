// rdb::is_empty_collection against hand-built values of every type: empty and
// not, plain and LZF-compressed, Redis's and Valkey's type numbering, and
// truncated or malformed bytes (which must answer "not empty"). Real
// redis-server DUMP payloads, and a real loader dropping what it calls empty,
// are in tests/integration/rdb_value_redis_test.cc.
#include "proto/rdb_value.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "proto/lzf.h"
#include "proto/rdb_format.h"
#include "tests/support/lzf_compress.h"
#include "tests/support/rdb_bytes.h"

namespace rrs::rdb {
namespace {

using namespace std::string_literals;
using test::le;
using test::len;
using test::lzf_compress_for_test;
using test::str;

constexpr uint16_t kRedis = 12;   // the newest Redis RDB version (7.4 and later)
constexpr uint16_t kValkey = 80;  // Valkey 9.0's

// An RDB string stored as RDB_ENC_LZF: 0xc3, compressed length, plain length.
std::string lzf_str(std::string_view compressed, size_t plain_len) {
  return "\xc3"s + len(compressed.size()) + len(plain_len) + std::string(compressed);
}
// A valid LZF stream of literal runs only (up to 32 bytes each).
std::string lzf_literals(std::string_view plain) {
  std::string out;
  for (size_t i = 0; i < plain.size(); i += 32) {
    std::string_view run = plain.substr(i, 32);
    out.push_back(static_cast<char>(run.size() - 1));
    out += run;
  }
  return out;
}

// zlbytes, zltail, zllen, entries, end marker.
std::string ziplist(uint16_t count, std::string_view entries = "", uint32_t tail = 10) {
  return le(11 + entries.size(), 4) + le(tail, 4) + le(count, 2) + std::string(entries) + "\xff";
}
// total bytes, count, entries, end marker.
std::string listpack(uint16_t count, std::string_view entries = "") {
  return le(7 + entries.size(), 4) + le(count, 2) + std::string(entries) + "\xff";
}
// A ziplist entry holding "a": previous entry length 0, 6-bit string length 1.
const std::string kZiplistEntryA = "\x00\x01"
                                   "a"s;
// A listpack entry holding "a": 7-bit string length 1, the byte, backlen 2.
const std::string kListpackEntryA = "\x81"
                                    "a\x02"s;

const std::string kEmptyZiplist = ziplist(0);
const std::string kEmptyListpack = listpack(0);

bool empty(uint8_t type, const std::string& value, uint16_t version = kRedis) {
  return is_empty_collection(type, value, version);
}

TEST(RdbValueTest, StringsAreNeverEmpty) {
  EXPECT_FALSE(empty(kString, str("")));
  EXPECT_FALSE(empty(kString, str("hello")));
  EXPECT_FALSE(empty(kString, "\xc0\x00"s));  // RDB_ENC_INT8 0
  EXPECT_FALSE(empty(kString, ""));
}

TEST(RdbValueTest, PlainCollectionsWithACountOfZero) {
  for (uint8_t t : {kList, kSet, kZset, kHash, kZset2}) {
    SCOPED_TRACE(int{t});
    EXPECT_TRUE(empty(t, len(0)));
    EXPECT_TRUE(empty(t, "\x40\x00"s));              // 0 as a 14-bit length
    EXPECT_TRUE(empty(t, "\x80\x00\x00\x00\x00"s));  // as a 32-bit one
    EXPECT_TRUE(empty(t, "\x81" + std::string(8, '\0')));
    EXPECT_TRUE(empty(t, len(0), kValkey));
    EXPECT_TRUE(empty(t, len(0), 6));
  }
  EXPECT_FALSE(empty(kList, len(1) + str("a")));
  EXPECT_FALSE(empty(kSet, len(2) + str("a") + str("b")));
  EXPECT_FALSE(empty(kZset, len(1) + str("a") + "\x01"s + "1"));
  EXPECT_FALSE(empty(kHash, len(1) + str("f") + str("v")));
  EXPECT_FALSE(empty(kZset2, len(1) + str("a") + le(0, 8)));
  EXPECT_FALSE(empty(kList, len(300)));  // a count, however truncated the rest
}

TEST(RdbValueTest, PlainCollectionsMalformed) {
  for (uint8_t t : {kList, kSet, kZset, kHash, kZset2}) {
    SCOPED_TRACE(int{t});
    EXPECT_FALSE(empty(t, ""));
    EXPECT_FALSE(empty(t, "\x40"s));             // 14-bit length cut short
    EXPECT_FALSE(empty(t, "\x80\x00\x00"s));     // 32-bit length cut short
    EXPECT_FALSE(empty(t, "\x82"s + le(0, 8)));  // no such length prefix
    EXPECT_FALSE(empty(t, "\xc0"s));             // a string encoding where the count belongs
    EXPECT_FALSE(empty(t, len(0) + "x"));        // bytes after an empty collection
  }
}

TEST(RdbValueTest, Ziplists) {
  for (uint8_t t : {kListZiplist, kZsetZiplist, kHashZiplist}) {
    SCOPED_TRACE(int{t});
    EXPECT_TRUE(empty(t, str(kEmptyZiplist)));
    EXPECT_TRUE(empty(t, str(ziplist(0xffff))));    // count unknown: the walk ends at once
    EXPECT_TRUE(empty(t, str(ziplist(0, "", 0))));  // zltail only has to point inside
    EXPECT_TRUE(empty(t, str(kEmptyZiplist), kValkey));

    EXPECT_FALSE(empty(t, str(ziplist(1, kZiplistEntryA))));
    EXPECT_FALSE(empty(t, str(ziplist(0xffff, kZiplistEntryA))));
    // A count of 0 over entries: the loaders' walk finds them and rejects
    // the count (ziplistValidateIntegrity), so this is corrupt, not empty.
    EXPECT_FALSE(empty(t, str(ziplist(0, kZiplistEntryA))));
    EXPECT_FALSE(empty(t, str(ziplist(1))));          // a count of 1 and no entry
    EXPECT_FALSE(empty(t, str(ziplist(0, "", 11))));  // zltail past the end marker
    std::string bad = kEmptyZiplist;
    bad[0] = 12;  // zlbytes is not the size
    EXPECT_FALSE(empty(t, str(bad)));
    bad = kEmptyZiplist;
    bad[10] = 0;  // no end marker
    EXPECT_FALSE(empty(t, str(bad)));
    EXPECT_FALSE(empty(t, str(kEmptyZiplist.substr(0, 10))));
    EXPECT_FALSE(empty(t, str(kEmptyZiplist + "\xff")));
    EXPECT_FALSE(empty(t, str(kEmptyListpack)));               // a listpack is no ziplist
    EXPECT_FALSE(empty(t, str(kEmptyZiplist) + "\xff"));       // bytes after the string
    EXPECT_FALSE(empty(t, str(kEmptyZiplist).substr(0, 11)));  // string cut short
    EXPECT_FALSE(empty(t, "\xc0\x00"s));                       // an integer-encoded string
  }
}

TEST(RdbValueTest, Listpacks) {
  for (uint8_t t : {kHashListpack, kZsetListpack, kSetListpack}) {
    SCOPED_TRACE(int{t});
    EXPECT_TRUE(empty(t, str(kEmptyListpack)));
    EXPECT_TRUE(empty(t, str(listpack(0xffff))));
    EXPECT_TRUE(empty(t, str(kEmptyListpack), kValkey));

    EXPECT_FALSE(empty(t, str(listpack(1, kListpackEntryA))));
    EXPECT_FALSE(empty(t, str(listpack(0xffff, kListpackEntryA))));
    EXPECT_FALSE(empty(t, str(listpack(2))));  // a count is believed, entries or not
    // Loaders count a listpack by its header (lpLength) and walk it only
    // with sanitize-dump-payload yes: by default a count of 0 over entries
    // is an empty key, and so is an unknown count with the end marker first.
    EXPECT_TRUE(empty(t, str(listpack(0, kListpackEntryA))));
    EXPECT_TRUE(empty(t, str(listpack(0xffff, "\xff" + kListpackEntryA))));
    std::string bad = kEmptyListpack;
    bad[0] = 8;
    EXPECT_FALSE(empty(t, str(bad)));
    bad = kEmptyListpack;
    bad[6] = 0;
    EXPECT_FALSE(empty(t, str(bad)));
    EXPECT_FALSE(empty(t, str(kEmptyListpack.substr(0, 6))));
    EXPECT_FALSE(empty(t, str(kEmptyZiplist)));
    EXPECT_FALSE(empty(t, str(kEmptyListpack) + "\x00"s));
    EXPECT_FALSE(empty(t, str(kEmptyListpack).substr(0, 7)));
  }
}

TEST(RdbValueTest, LzfCompressedZiplistsAndListpacks) {
  // Literal runs only, and a stream with a back-reference (07 00, then 3
  // bytes copied from 1 back: 00 00 00, then 00 ff): both give kEmptyListpack.
  const std::string literal_lp = lzf_str(lzf_literals(kEmptyListpack), 7);
  const std::string backref_lp = lzf_str("\x01\x07\x00\x20\x00\x01\x00\xff"s, 7);
  const std::string literal_zl = lzf_str(lzf_literals(kEmptyZiplist), 11);
  for (uint8_t t : {kHashListpack, kZsetListpack, kSetListpack}) {
    EXPECT_TRUE(empty(t, literal_lp)) << int{t};
    EXPECT_TRUE(empty(t, backref_lp)) << int{t};
  }
  for (uint8_t t : {kListZiplist, kZsetZiplist, kHashZiplist}) EXPECT_TRUE(empty(t, literal_zl));

  const std::string full_lp = listpack(1, kListpackEntryA);
  EXPECT_FALSE(empty(kHashListpack, lzf_str(lzf_literals(full_lp), full_lp.size())));
  const std::string full_zl = ziplist(1, kZiplistEntryA);
  EXPECT_FALSE(empty(kListZiplist, lzf_str(lzf_literals(full_zl), full_zl.size())));

  // Counted by the header, as plain ones are.
  const std::string lying = listpack(0, kListpackEntryA);
  EXPECT_TRUE(empty(kHashListpack, lzf_str(lzf_literals(lying), lying.size())));

  // Declared sizes that do not match what the stream gives.
  EXPECT_FALSE(empty(kHashListpack, lzf_str(lzf_literals(kEmptyListpack), 8)));
  EXPECT_FALSE(empty(kHashListpack, lzf_str(lzf_literals(kEmptyListpack + "x"), 7)));
  EXPECT_FALSE(empty(kHashListpack, lzf_str(lzf_literals(kEmptyListpack.substr(0, 6)), 7)));
  // A back-reference before the start of the output.
  EXPECT_FALSE(empty(kHashListpack, lzf_str("\x20\x05\x04\x00\x00\x00\x00\xff"s, 7)));
  // A compressed length past the end of the value, and a value cut short.
  std::string past = "\xc3"s + len(200) + len(7) + lzf_literals(kEmptyListpack);
  EXPECT_FALSE(empty(kHashListpack, past));
  for (size_t n = 0; n < literal_lp.size(); ++n)
    EXPECT_FALSE(empty(kHashListpack, literal_lp.substr(0, n))) << n;
  // An unknown special encoding.
  EXPECT_FALSE(empty(kHashListpack, "\xc4"s + len(8) + len(7) + lzf_literals(kEmptyListpack)));
  // A huge declared plain size is refused before decompressing anything.
  EXPECT_FALSE(empty(kHashListpack, "\xc3"s + len(9) + "\x81\xff\xff\xff\xff\xff\xff\xff\xff" +
                                        lzf_literals(kEmptyListpack)));
}

// A listpack whose header says empty, compressed with back-references up to
// 8 KiB behind (across the decoder's window), must be decoded to its end to
// see the end marker; one whose header says otherwise need not be.
TEST(RdbValueTest, LzfLongListpacksAreDecodedThroughAWindow) {
  std::mt19937 rng(7);
  std::string chunk(8000, '\0');
  for (char& c : chunk) c = static_cast<char>(rng() % 200);  // never 0xff
  for (uint8_t last : {uint8_t{0xff}, uint8_t{0xfe}}) {
    chunk.back() = static_cast<char>(last);
    // A count of 0, the chunk three times: the last byte (the end marker or
    // not) is copied from 8000 bytes back.
    std::string body = chunk + chunk + chunk;
    std::string lp = le(6 + body.size(), 4) + le(0, 2) + body;
    const std::string compressed = lzf_compress_for_test(lp);
    ASSERT_LT(compressed.size(), lp.size() / 2);
    auto round_trip = lzf_decompress(compressed, lp.size());
    ASSERT_TRUE(round_trip.ok());
    ASSERT_EQ(*round_trip, lp);
    EXPECT_EQ(empty(kHashListpack, lzf_str(compressed, lp.size())), last == 0xff);
    // A count of 1: not empty, whatever follows.
    std::string full = lp;
    full[4] = 1;
    EXPECT_FALSE(empty(kHashListpack, lzf_str(lzf_compress_for_test(full), full.size())));
    // One byte declared more or less than the stream gives.
    EXPECT_FALSE(empty(kHashListpack, lzf_str(compressed, lp.size() + 1)));
    EXPECT_FALSE(empty(kHashListpack, lzf_str(compressed, lp.size() - 1)));
  }
}

TEST(RdbValueTest, Quicklist) {
  const std::string node = str(kEmptyZiplist);
  const std::string full = str(ziplist(1, kZiplistEntryA));
  EXPECT_TRUE(empty(kListQuicklist, len(0)));
  EXPECT_TRUE(empty(kListQuicklist, len(1) + node));
  EXPECT_TRUE(
      empty(kListQuicklist, len(3) + node + node + lzf_str(lzf_literals(kEmptyZiplist), 11)));
  EXPECT_TRUE(empty(kListQuicklist, len(1) + str(ziplist(0xffff))));

  EXPECT_FALSE(empty(kListQuicklist, len(1) + full));
  EXPECT_FALSE(empty(kListQuicklist, len(2) + node + full));
  EXPECT_FALSE(empty(kListQuicklist, len(2) + full + node));
  EXPECT_FALSE(empty(kListQuicklist, len(2) + node));         // a node missing
  EXPECT_FALSE(empty(kListQuicklist, len(1) + node + node));  // a node too many
  EXPECT_FALSE(empty(kListQuicklist, len(1) + str("")));      // the loaders reject a 0-byte node
  EXPECT_FALSE(empty(kListQuicklist, len(1) + str(kEmptyListpack)));
  EXPECT_FALSE(empty(kListQuicklist, len(1) + len(2) + str(kEmptyZiplist)));  // no containers in 14
}

TEST(RdbValueTest, Quicklist2) {
  const std::string packed = len(kQuicklistPacked) + str(kEmptyListpack);
  const std::string full = len(kQuicklistPacked) + str(listpack(1, kListpackEntryA));
  const std::string plain = len(kQuicklistPlain) + str("an element");
  EXPECT_TRUE(empty(kListQuicklist2, len(0)));
  EXPECT_TRUE(empty(kListQuicklist2, len(1) + packed));
  EXPECT_TRUE(empty(kListQuicklist2, len(2) + packed + len(kQuicklistPacked) +
                                         lzf_str(lzf_literals(kEmptyListpack), 7)));
  EXPECT_TRUE(empty(kListQuicklist2, len(1) + len(kQuicklistPacked) + str(listpack(0xffff))));
  EXPECT_TRUE(empty(kListQuicklist2, len(1) + packed, kValkey));

  EXPECT_FALSE(empty(kListQuicklist2, len(1) + full));
  EXPECT_FALSE(empty(kListQuicklist2, len(2) + packed + full));
  // A plain node is one element, whatever its bytes.
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + plain));
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + len(kQuicklistPlain) + str(kEmptyListpack)));
  EXPECT_FALSE(empty(kListQuicklist2, len(2) + packed + plain));
  // Container numbers other than 1 and 2 are corrupt.
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + len(0) + str(kEmptyListpack)));
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + len(3) + str(kEmptyListpack)));
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + str(kEmptyListpack)));  // no container
  EXPECT_FALSE(empty(kListQuicklist2, len(2) + packed));
  EXPECT_FALSE(empty(kListQuicklist2, len(1) + len(kQuicklistPacked) + str(kEmptyZiplist)));
}

TEST(RdbValueTest, IntsetsAndZipmapsAreRejectedNotDropped) {
  // intsetValidateIntegrity and zipmapValidateIntegrity fail on an empty one:
  // the loaders report a corrupt RDB rather than skip the key.
  const std::string empty_intset = le(2, 4) + le(0, 4);
  const std::string intset = le(2, 4) + le(1, 4) + le(7, 2);
  EXPECT_FALSE(empty(kSetIntset, str(empty_intset)));
  EXPECT_FALSE(empty(kSetIntset, str(intset)));
  EXPECT_FALSE(empty(kHashZipmap, str("\x00\xff"s)));
  EXPECT_FALSE(empty(kHashZipmap, str("\x01\x01"
                                      "f\x01\x00v\xff"s)));
}

// RDB 1 to 5 (Redis 2.4's encodings): the same answers as under RDB 12.
TEST(RdbValueTest, OldVersionsAnswerAsNewOnes) {
  for (uint16_t v = 1; v <= 5; ++v) {
    SCOPED_TRACE(v);
    for (uint8_t t : {kList, kSet, kZset, kHash}) {
      EXPECT_TRUE(empty(t, len(0), v));
      EXPECT_FALSE(empty(t, len(1) + str("a") + (t == kZset ? "\x01"s + "1" : str("b")), v));
    }
    EXPECT_FALSE(empty(kZset, len(1) + str("a") + "\xfe"s, v));  // +inf, no digits
    for (uint8_t t : {kListZiplist, kZsetZiplist, kHashZiplist}) {
      EXPECT_TRUE(empty(t, str(kEmptyZiplist), v));
      EXPECT_FALSE(empty(t, str(ziplist(1, kZiplistEntryA)), v));
    }
    EXPECT_FALSE(empty(kSetIntset, str(le(2, 4) + le(0, 4)), v));
    EXPECT_FALSE(empty(kHashZipmap, str("\x00\xff"s), v));
    EXPECT_FALSE(empty(kString, str(""), v));
  }
}

TEST(RdbValueTest, StreamsAndModulesAreNeverEmpty) {
  // No listpacks, length 0, last ID 0-0, no groups: what XADD + XDEL leave.
  const std::string v1 = len(0) + len(0) + len(0) + len(0) + len(0);
  const std::string v2 = len(0) + std::string(7, '\0') + len(0);
  for (uint8_t t : {kStreamListpacks, kStreamListpacks2, kStreamListpacks3}) {
    EXPECT_FALSE(empty(t, v1)) << int{t};
    EXPECT_FALSE(empty(t, v2)) << int{t};
    EXPECT_FALSE(empty(t, len(0))) << int{t};
  }
  EXPECT_FALSE(empty(kModule2, len(12345) + len(kModuleEof)));
  EXPECT_FALSE(empty(kModulePreGa, len(0)));
}

TEST(RdbValueTest, RedisHashesWithFieldTtls) {
  const std::string ttl = le(1700000000000, 8);
  // 7.4 release candidates: no minimum TTL in front.
  EXPECT_TRUE(empty(kHashMetadataPreGa, len(0)));
  EXPECT_TRUE(empty(kHashMetadataPreGa, len(0), 11));
  EXPECT_FALSE(empty(kHashMetadataPreGa, len(1) + len(0) + str("f") + str("v")));
  EXPECT_TRUE(empty(kHashListpackExPreGa, str(kEmptyListpack)));
  EXPECT_FALSE(empty(kHashListpackExPreGa,
                     str(listpack(3, kListpackEntryA + kListpackEntryA + kListpackEntryA))));
  // GA: the minimum TTL first.
  EXPECT_TRUE(empty(kHashMetadata, ttl + len(0)));
  EXPECT_TRUE(empty(kHashMetadata, le(uint64_t{1} << 48, 8) + len(0)));         // "none"
  EXPECT_FALSE(empty(kHashMetadata, le((uint64_t{1} << 48) + 1, 8) + len(0)));  // corrupt
  EXPECT_FALSE(empty(kHashMetadata, ttl + len(1) + len(0) + str("f") + str("v")));
  EXPECT_FALSE(empty(kHashMetadata, len(0)));  // no TTL
  EXPECT_FALSE(empty(kHashMetadata, ttl.substr(0, 7)));
  EXPECT_TRUE(empty(kHashListpackEx, ttl + str(kEmptyListpack)));
  EXPECT_TRUE(empty(kHashListpackEx, le(UINT64_MAX, 8) + str(kEmptyListpack)));  // unused there
  EXPECT_TRUE(empty(kHashListpackEx, ttl + lzf_str(lzf_literals(kEmptyListpack), 7)));
  EXPECT_FALSE(empty(kHashListpackEx, str(kEmptyListpack)));  // no TTL
  EXPECT_FALSE(empty(kHashListpackEx,
                     ttl + str(listpack(3, kListpackEntryA + kListpackEntryA + kListpackEntryA))));
}

TEST(RdbValueTest, TypesFromTwentyTwoOnDependOnTheRdbVersion) {
  // Type 22 counts first in both numberings: Redis 7.4 RC's hash with field
  // TTLs, Valkey 9.0's HASH_2 (field, value, expiry per element).
  const std::string count0 = len(0);
  const std::string hash2 = len(1) + str("f") + str("v") + le(UINT64_MAX, 8);
  EXPECT_TRUE(empty(22, count0, kRedis));
  EXPECT_TRUE(empty(22, count0, kValkey));
  EXPECT_TRUE(empty(22, count0, 81));
  EXPECT_FALSE(empty(22, hash2, kValkey));
  EXPECT_FALSE(empty(22, count0 + le(0, 8), kValkey));
  // 23 to 25 are Redis's; Valkey has no such types.
  const std::string ttl = le(1700000000000, 8);
  EXPECT_TRUE(empty(23, str(kEmptyListpack), kRedis));
  EXPECT_FALSE(empty(23, str(kEmptyListpack), kValkey));
  EXPECT_TRUE(empty(24, ttl + count0, kRedis));
  EXPECT_FALSE(empty(24, ttl + count0, kValkey));
  EXPECT_FALSE(empty(24, count0, kValkey));
  EXPECT_TRUE(empty(25, ttl + str(kEmptyListpack), kRedis));
  EXPECT_FALSE(empty(25, ttl + str(kEmptyListpack), kValkey));
  // RDB 13 to 79 are neither's: nothing from 22 on is known there.
  for (uint16_t v : {uint16_t{13}, uint16_t{50}, uint16_t{79}}) {
    EXPECT_FALSE(empty(22, count0, v)) << v;
    EXPECT_FALSE(empty(24, ttl + count0, v)) << v;
    EXPECT_TRUE(empty(kHash, count0, v)) << v;
  }
  // Unknown types.
  for (uint8_t t : {uint8_t{8}, uint8_t{26}, uint8_t{100}, uint8_t{243}, uint8_t{255}}) {
    EXPECT_FALSE(empty(t, count0, kRedis)) << int{t};
    EXPECT_FALSE(empty(t, count0, kValkey)) << int{t};
  }
}

// Every empty value, cut short anywhere or with any one byte changed, must be
// answered without reading outside the value (ASan in the fuzz build checks
// the reads; here: no crash, and a cut value is never empty).
TEST(RdbValueTest, CutAndFlippedEmptyValues) {
  const std::string ttl = le(1700000000000, 8);
  const std::vector<std::pair<uint8_t, std::string>> cases = {
      {kList, len(0)},
      {kHashZiplist, str(kEmptyZiplist)},
      {kSetListpack, str(kEmptyListpack)},
      {kSetListpack, lzf_str("\x01\x07\x00\x20\x00\x01\x00\xff"s, 7)},
      {kListQuicklist, len(2) + str(kEmptyZiplist) + lzf_str(lzf_literals(kEmptyZiplist), 11)},
      {kListQuicklist2, len(2) + len(2) + str(kEmptyListpack) + len(2) + str(listpack(0xffff))},
      {kHashMetadata, ttl + len(0)},
      {kHashListpackEx, ttl + str(kEmptyListpack)},
  };
  for (const auto& [type, value] : cases) {
    ASSERT_TRUE(empty(type, value)) << int{type};
    for (size_t n = 0; n < value.size(); ++n) {
      // A heap copy of exactly n bytes, so a read past it is a real overrun.
      std::vector<char> cut(value.begin(), value.begin() + static_cast<ptrdiff_t>(n));
      EXPECT_FALSE(is_empty_collection(type, std::string_view(cut.data(), cut.size()), kRedis))
          << int{type} << " cut to " << n;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string flipped = value;
        flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
        (void)empty(type, flipped);  // any answer; it must just not go out of bounds
      }
    }
  }
}

TEST(RdbValueTest, RandomBytesOfEveryType) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20000; ++i) {
    std::vector<char> bytes(rng() % 24);
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? 0xff : rng() % 16);
    const auto type = static_cast<uint8_t>(rng() % 27);
    const auto version = static_cast<uint16_t>(rng() % 2 ? kRedis : kValkey);
    (void)is_empty_collection(type, std::string_view(bytes.data(), bytes.size()), version);
  }
}

// string_value: what SET would take for a string value, in each encoding.
TEST(RdbStringValueTest, EveryEncoding) {
  std::string scratch;
  EXPECT_EQ(string_value(str("hello"), scratch, 100), "hello");
  EXPECT_EQ(string_value(str(""), scratch, 100), "");
  EXPECT_EQ(string_value("\xc0\x85"s, scratch, 100), "-123");                    // int8
  EXPECT_EQ(string_value("\xc1\x39\x30"s, scratch, 100), "12345");               // int16
  EXPECT_EQ(string_value("\xc2\xff\xff\xff\x7f"s, scratch, 100), "2147483647");  // int32
  const std::string plain(300, 'x');
  const std::string packed = lzf_compress_for_test(plain);
  ASSERT_FALSE(packed.empty());
  EXPECT_EQ(string_value(lzf_str(packed, plain.size()), scratch, 1000), plain);
}

TEST(RdbStringValueTest, MalformedOrTooLargeIsNotAString) {
  std::string scratch;
  EXPECT_FALSE(string_value("", scratch, 100));                         // nothing
  EXPECT_FALSE(string_value(str("hello") + "x", scratch, 100));         // bytes after it
  EXPECT_FALSE(string_value(str("hello").substr(0, 3), scratch, 100));  // cut short
  EXPECT_FALSE(string_value("\xc4"s, scratch, 100));                    // no such encoding
  EXPECT_FALSE(string_value(str("hello"), scratch, 4));                 // past the limit
  const std::string plain(300, 'x');
  const std::string packed = lzf_compress_for_test(plain);
  EXPECT_FALSE(string_value(lzf_str(packed, plain.size()), scratch, 299));
  EXPECT_FALSE(string_value(lzf_str(packed, plain.size() + 1), scratch, 1000));  // lies
  for (size_t n = 0; n < packed.size(); ++n) {
    std::vector<char> cut(packed.begin(), packed.begin() + static_cast<ptrdiff_t>(n));
    (void)string_value(lzf_str(std::string(cut.data(), cut.size()), plain.size()), scratch, 1000);
  }
}

}  // namespace
}  // namespace rrs::rdb
