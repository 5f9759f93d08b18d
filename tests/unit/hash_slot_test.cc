#include "proto/hash_slot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/crc16.h"

namespace rrs {
namespace {

// The CRC one bit at a time, straight from its definition: what the table
// must agree with.
uint16_t crc16_bitwise(const std::string& s) {
  uint16_t crc = 0;
  for (unsigned char byte : s) {
    crc ^= static_cast<uint16_t>(byte << 8);
    for (int k = 0; k < 8; ++k)
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}

TEST(Crc16, KnownVectors) {
  EXPECT_EQ(crc16(0, "123456789", 9), 0x31c3);  // the XMODEM check value
  EXPECT_EQ(crc16(0, "", 0), 0);
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
  EXPECT_EQ(crc16(0, all_bytes.data(), all_bytes.size()), crc16_bitwise(all_bytes));
  for (int i = 0; i < 256; ++i) {
    const std::string one(1, static_cast<char>(i));
    EXPECT_EQ(crc16(0, one.data(), 1), crc16_bitwise(one)) << i;
  }
}

TEST(Crc16, ExtendsAcrossSplits) {
  std::string s(300, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 37 + 3);
  const uint16_t whole = crc16(0, s.data(), s.size());
  for (size_t cut : {0, 1, 2, 150, 299, 300})
    EXPECT_EQ(crc16(crc16(0, s.data(), cut), s.data() + cut, s.size() - cut), whole) << cut;
}

// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
TEST(HashSlot, KnownKeys) {
  EXPECT_EQ(hash_slot("foo"), 12182);
  EXPECT_EQ(hash_slot("bar"), 5061);
  EXPECT_EQ(hash_slot("123456789"), 0x31c3 % kHashSlots);
  EXPECT_EQ(hash_slot(""), 0);
}

TEST(HashSlot, HashTagPicksTheBytesHashed) {
  EXPECT_EQ(hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("{user1000}.followers"));
  EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("user1000"));
  // "{}" is no tag: the whole key is hashed, later braces notwithstanding.
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}");
  // The tag runs from the first '{' to the first '}' after it.
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hash_slot("foo{{bar}}zap"), hash_slot("{bar"));
  EXPECT_EQ(hash_tag("foo{bar}{zap}"), "bar");
  EXPECT_EQ(hash_slot("foo{bar}{zap}"), hash_slot("bar"));
  // No '}' after the '{', or only one before it: no tag.
  EXPECT_EQ(hash_tag("foo{bar"), "foo{bar");
  EXPECT_EQ(hash_tag("}foo{bar"), "}foo{bar");
  EXPECT_EQ(hash_tag("a}b{c}"), "c");
  EXPECT_EQ(hash_tag("{}"), "{}");
  EXPECT_EQ(hash_tag("{x}"), "x");
}

TEST(HashSlot, KeysAreBinary) {
  using namespace std::string_literals;
  const std::string nul_key = "a\0b"s;
  EXPECT_EQ(hash_slot(nul_key), crc16_bitwise(nul_key) % kHashSlots);
  EXPECT_NE(hash_slot(nul_key), hash_slot("a"));  // the NUL does not end the key
  // A tag may hold NULs and high bytes; bytes around it do not count.
  EXPECT_EQ(hash_tag("\0{\xff\0}\0"s), "\xff\0"s);
  EXPECT_EQ(hash_slot("x{\0\xfe}y"s), hash_slot("\0\xfe"s));
  EXPECT_EQ(hash_slot("\0"s), crc16_bitwise("\0"s) % kHashSlots);
}

TEST(HashSlot, EverySlotIsReachable) {
  std::vector<bool> seen(kHashSlots);
  size_t distinct = 0;
  for (int i = 0; i < 200000 && distinct < kHashSlots; ++i) {
    const uint16_t slot = hash_slot("key:" + std::to_string(i));
    ASSERT_LT(slot, kHashSlots);
    if (seen[slot]) continue;
    seen[slot] = true;
    ++distinct;
  }
  EXPECT_EQ(distinct, kHashSlots);
}

}  // namespace
}  // namespace rrs
