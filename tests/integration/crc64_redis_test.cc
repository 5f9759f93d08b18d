// Our CRC-64 and LZF against a real redis-server: the checksum in each DUMP
// trailer, and the LZF strings Redis writes for compressible values.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "proto/crc64.h"
#include "proto/dump_payload.h"
#include "proto/lzf.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"

namespace rrs {
namespace {

using test::random_bytes;
using test::RedisProcess;

std::string dump(RedisProcess& redis, const std::string& key) {
  test::Reply r = redis.run({"DUMP", key});
  if (!r || r->type != REDIS_REPLY_STRING) {
    ADD_FAILURE() << "DUMP " << key << ": " << test::to_string(r);
    return "";
  }
  return std::string(r->str, r->len);
}

// An RDB length (rdb.h: 00 6-bit, 01 14-bit, 0x80 32-bit BE, 0x81 64-bit BE)
// at `at`, advancing it; nullopt for a special encoding or a short buffer.
std::optional<uint64_t> rdb_length(std::string_view p, size_t& at) {
  auto u8 = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])); };
  if (at >= p.size()) return std::nullopt;
  uint64_t b = u8(at++);
  if ((b >> 6) == 0) return b & 0x3f;
  if ((b >> 6) == 1)
    return at < p.size() ? std::optional((b & 0x3f) << 8 | u8(at++)) : std::nullopt;
  size_t n = b == 0x80 ? 4 : b == 0x81 ? 8 : 0;
  if (n == 0 || p.size() - at < n) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | u8(at++);
  return v;
}

TEST(Crc64Redis, DumpTrailersMatchOurCrc64) {
  RedisProcess redis;
  ASSERT_TRUE(redis.started()) << redis.start_error();
  redis.run({"SET", "short", "hello"});
  redis.run({"SET", "int", "1234567"});  // stored int-encoded
  redis.run({"SET", "random", random_bytes(size_t{100} * 1024, 1)});
  redis.run({"SET", "lzf", std::string(20000, 'x') + "tail"});  // stored LZF-compressed
  redis.run({"HSET", "hash", "f1", "v1", "f2", "2", "f3", std::string(50, 'z')});
  for (const char* key : {"short", "int", "random", "lzf", "hash"}) {
    SCOPED_TRACE(key);
    std::string p = dump(redis, key);
    ASSERT_GE(p.size(), dump::kTrailerSize);
    uint64_t want = 0;
    for (int i = 7; i >= 0; --i) want = want << 8 | static_cast<unsigned char>(p[p.size() - 8 + i]);
    EXPECT_EQ(crc64(0, p.data(), p.size() - 8), want);
    for (Crc64Impl impl : {Crc64Impl::kSlicing8, Crc64Impl::kPclmul}) {
      if (!crc64_impl_available(impl)) continue;
      EXPECT_EQ(crc64_using(impl, 0, p.data(), p.size() - 8), want) << crc64_impl_name(impl);
    }
  }
}

TEST(LzfRedis, DecodesStringsRedisCompressed) {
  RedisProcess redis;
  ASSERT_TRUE(redis.started()) << redis.start_error();
  std::string text;
  for (int i = 0; text.size() < 50000; ++i) text += "user:" + std::to_string(i % 977) + ";";
  const std::string values[] = {std::string(20000, 'x') + "tail", text,
                                std::string(300, 'a') + random_bytes(40, 2) +
                                    std::string(300, 'b')};
  for (const std::string& value : values) {
    redis.run({"SET", "k", value});
    std::string p = dump(redis, "k");
    // <type 0 = string> <0xC3 = RDB_ENC_LZF> <compressed len> <len> <data> <trailer>
    ASSERT_GE(p.size(), 2 + dump::kTrailerSize);
    ASSERT_EQ(p[0], 0) << "not a plain string";
    ASSERT_EQ(static_cast<unsigned char>(p[1]), 0xc3) << "Redis did not LZF-compress it";
    size_t at = 2;
    auto clen = rdb_length(p, at);
    auto len = rdb_length(p, at);
    ASSERT_TRUE(clen && len);
    ASSERT_EQ(*len, value.size());
    ASSERT_EQ(at + *clen + dump::kTrailerSize, p.size());
    ASSERT_LE(*len, *clen * kLzfMaxExpansion);
    auto out = lzf_decompress(std::string_view(p).substr(at, *clen), *len);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(*out == value) << "decoded " << out->size() << " bytes differ";
  }
}

}  // namespace
}  // namespace rrs
