// What the source says it holds, from INFO keyspace and INFO memory texts.
#include "server/dataset_hint.h"

#include <gtest/gtest.h>

namespace rrs {
namespace {

TEST(DatasetHint, SumsEveryDbAndTakesUsedMemory) {
  const DatasetHint h = parse_dataset_hint(
      "# Keyspace\r\ndb0:keys=1000,expires=3,avg_ttl=0\r\ndb7:keys=24,expires=0,avg_ttl=0\r\n",
      "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n");
  EXPECT_EQ(h.keys, 1024u);
  EXPECT_EQ(h.bytes, 1048576u);
}

TEST(DatasetHint, NothingUsableIsZero) {
  const DatasetHint h = parse_dataset_hint("# Keyspace\r\n", "used_memory:lots\r\n");
  EXPECT_EQ(h.keys, 0u);
  EXPECT_EQ(h.bytes, 0u);
}

}  // namespace
}  // namespace rrs
