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

}  // namespace
}  // namespace rrs::dump
