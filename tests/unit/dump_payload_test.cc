#include "proto/dump_payload.h"

#include <gtest/gtest.h>

#include <string>

namespace rrs::dump {
namespace {

TEST(DumpPayload, ReadsRdbVersionFromTrailer) {
  // DUMP of the string "bar" on Redis 7.0: type 0, length 3, "bar", RDB 10, CRC64.
  std::string p("\x00\x03"
                "bar"
                "\x0a\x00"
                "12345678",
                15);
  EXPECT_EQ(rdb_version(p), 10);
  EXPECT_EQ(rdb_version("short"), std::nullopt);
}

TEST(DumpPayload, MapsRedisVersionsToRdbVersions) {
  EXPECT_EQ(max_rdb_for_redis("7.0.15"), 10);
  EXPECT_EQ(max_rdb_for_redis("7.2.4"), 11);
  EXPECT_EQ(max_rdb_for_redis("7.4.0"), 12);
  EXPECT_EQ(max_rdb_for_redis("8.0.1"), 12);
  EXPECT_EQ(max_rdb_for_redis("6.2.14"), 9);
  EXPECT_EQ(max_rdb_for_redis("5.0.0"), 9);
  EXPECT_EQ(max_rdb_for_redis("garbage"), std::nullopt);
  EXPECT_STREQ(first_redis_for_rdb(11), "7.2");
}

}  // namespace
}  // namespace rrs::dump
