#include "proto/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rrs {
namespace {

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) appendix B.4 and the classic check value.
  EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(0, zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(0, ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(0, inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(0, "", 0), 0u);
}

TEST(Crc32c, ExtendsAcrossSplits) {
  std::string s(1000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 31 + 7);
  uint32_t whole = crc32c(0, s.data(), s.size());
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000})
    EXPECT_EQ(crc32c(crc32c(0, s.data(), cut), s.data() + cut, s.size() - cut), whole) << cut;
}

}  // namespace
}  // namespace rrs
