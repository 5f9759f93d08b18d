// The MULTI ... EXEC grouping both followers cut the master's stream with.
#include "client/follow/transaction_blocks.h"

#include <gtest/gtest.h>

namespace rrs {
namespace {

using Next = TransactionBlocks::Next;

Next add(TransactionBlocks& blocks, std::vector<std::string_view> args, uint64_t end = 10) {
  auto next = blocks.add(args, end);
  EXPECT_TRUE(next.ok()) << next.status().message();
  return next.ok() ? *next : Next::kHeld;
}

TEST(TransactionBlocks, ABlockIsHeldUntilItsExecAndGivenWhole) {
  TransactionBlocks blocks;
  EXPECT_EQ(add(blocks, {"set", "k", "v"}), Next::kCommand);
  EXPECT_EQ(add(blocks, {"PING"}), Next::kChatter);
  EXPECT_EQ(add(blocks, {"Multi"}), Next::kHeld);
  EXPECT_TRUE(blocks.open());
  EXPECT_EQ(add(blocks, {"INCR", "a"}), Next::kHeld);
  EXPECT_EQ(add(blocks, {"REPLCONF", "GETACK", "*"}), Next::kHeld);  // dropped inside
  EXPECT_EQ(add(blocks, {"DEL", "b"}), Next::kHeld);
  EXPECT_EQ(add(blocks, {"exec"}), Next::kBlock);
  EXPECT_FALSE(blocks.open());
  const auto block = blocks.take_block();
  ASSERT_EQ(block.size(), 2u);
  EXPECT_EQ(block[0], (std::vector<std::string>{"INCR", "a"}));
  EXPECT_EQ(block[1], (std::vector<std::string>{"DEL", "b"}));
}

TEST(TransactionBlocks, EmptyBlocksExecAloneAndNestedMulti) {
  TransactionBlocks blocks;
  EXPECT_EQ(add(blocks, {"MULTI"}), Next::kHeld);
  EXPECT_EQ(add(blocks, {"EXEC"}), Next::kBlock);
  EXPECT_TRUE(blocks.take_block().empty());
  // Outside a block EXEC is a command like any other: the target answers it.
  EXPECT_EQ(add(blocks, {"EXEC"}), Next::kCommand);

  EXPECT_EQ(add(blocks, {"MULTI"}), Next::kHeld);
  auto nested = blocks.add(std::vector<std::string_view>{"MULTI"}, 42);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().kind(), ErrorKind::kBadData);
  EXPECT_NE(nested.status().message().find("stream offset 42"), std::string::npos)
      << nested.status().message();
}

}  // namespace
}  // namespace rrs
