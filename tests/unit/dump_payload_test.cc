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

TEST(DumpPayload, RestampIsWhatWritePayloadGivesForTheOtherVersion) {
  std::string at10(payload_size(4), '\0'), at12(payload_size(4), '\0');
  write_payload(0,
                "\x03"
                "bar",
                10, at10.data());
  write_payload(0,
                "\x03"
                "bar",
                12, at12.data());
  ASSERT_NE(at10, at12);
  restamp(at10, 12);
  EXPECT_EQ(at10, at12);
  std::string short_one = "short";
  restamp(short_one, 12);
  EXPECT_EQ(short_one, "short");
}

}  // namespace
}  // namespace rrs::dump
