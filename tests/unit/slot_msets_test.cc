// SlotMsets (client/cluster/slot_msets.h): TTL-less strings gathered by hash
// slot into MSETs, and an MSET split back into one SET per key when the
// target does not take it whole. No target: the wire bytes are checked.
#include "client/cluster/slot_msets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proto/resp_writer.h"

namespace rrs {
namespace {

TEST(SlotMsetsTest, GroupsBySlotInOrderAndGivesChunksBack) {
  SlotMsets msets(1 << 20);
  EXPECT_FALSE(msets.add(7, 10, "a", "1"));
  EXPECT_FALSE(msets.add(9, 11, "bb", "22"));
  EXPECT_FALSE(msets.add(7, 12, "c", "333"));
  EXPECT_EQ(msets.filled(), (std::vector<uint16_t>{7, 9}));
  EXPECT_EQ(msets.held_bytes(), 2 * SlotMsets::kChunkBytes);

  std::string out = "before";
  RoutedCommand c = msets.flush(7, out);
  EXPECT_EQ(out, "before" + resp::command({"MSET", "a", "1", "c", "333"}));
  EXPECT_EQ(c.slot, 7);
  EXPECT_EQ(c.index, 10u);
  EXPECT_EQ(c.indices, (std::vector<uint64_t>{10, 12}));
  EXPECT_EQ(c.key, "a");
  EXPECT_EQ(c.keys(), 2u);
  EXPECT_EQ(c.bytes, 6u);
  EXPECT_TRUE(c.wire.empty());
  EXPECT_EQ(msets.filled(), (std::vector<uint16_t>{9}));
  EXPECT_EQ(msets.held_bytes(), SlotMsets::kChunkBytes);

  out.clear();
  (void)msets.flush(9, out);
  EXPECT_EQ(out, resp::command({"MSET", "bb", "22"}));
  EXPECT_EQ(msets.held_bytes(), 0u);
  EXPECT_TRUE(msets.filled().empty());

  EXPECT_FALSE(msets.add(7, 20, "d", "4"));  // a slot's group starts afresh
  out.clear();
  EXPECT_EQ(msets.flush(7, out).indices, (std::vector<uint64_t>{20}));
  EXPECT_EQ(out, resp::command({"MSET", "d", "4"}));
}

TEST(SlotMsetsTest, AGroupSpansChunksInOrderAndTheBudgetCountsChunks) {
  SlotMsets msets(3 * SlotMsets::kChunkBytes);
  std::vector<std::string_view> want = {"MSET"};
  std::vector<std::string> keys, values;
  for (int i = 0; i < 12; ++i) {  // 500-byte pairs: 7 to a chunk
    keys.push_back("k" + std::to_string(i));
    values.push_back(std::string(500 - keys.back().size(), static_cast<char>('a' + i)));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_FALSE(msets.over_budget()) << i;
    (void)msets.add(1, i, keys[i], values[i]);
    want.push_back(keys[i]);
    want.push_back(values[i]);
  }
  EXPECT_EQ(msets.held_bytes(), 2 * SlotMsets::kChunkBytes);
  EXPECT_FALSE(msets.over_budget());
  (void)msets.add(2, 99, "x", "y");
  EXPECT_TRUE(msets.over_budget());  // every chunk is held

  std::string out, expected;
  resp::append_command(expected, std::span<const std::string_view>(want));
  RoutedCommand c = msets.flush(1, out);
  EXPECT_EQ(out, expected);
  EXPECT_EQ(c.keys(), keys.size());
  EXPECT_EQ(c.indices.back(), keys.size() - 1);
  EXPECT_FALSE(msets.over_budget());
}

TEST(SlotMsetsTest, AGroupIsFullAtItsKeyBoundAndOnlySmallPairsGather) {
  SlotMsets msets(1 << 20);
  uint32_t added = 0;
  while (!msets.add(3, added, "k" + std::to_string(added), "v")) ++added;
  EXPECT_EQ(added + 1, SlotMsets::kMaxKeys);
  std::string out;
  EXPECT_EQ(msets.flush(3, out).keys(), SlotMsets::kMaxKeys);

  EXPECT_TRUE(SlotMsets::gathers("k", std::string(SlotMsets::kMaxPairBytes - 1, 'x')));
  EXPECT_FALSE(SlotMsets::gathers("k", std::string(SlotMsets::kMaxPairBytes, 'x')));
  EXPECT_TRUE(SlotMsets::gathers(std::string(SlotMsets::kMaxPairBytes, 'k'), ""));
  EXPECT_FALSE(SlotMsets::gathers(std::string(SlotMsets::kMaxPairBytes + 1, 'k'), ""));
}

TEST(SlotMsetsTest, ASplitMsetIsOneSetPerKeyWithItsOwnRecord) {
  SlotMsets msets(1 << 20);
  const std::string binary("k\0\r\n", 4);
  (void)msets.add(5, 40, binary, "x");
  (void)msets.add(5, 41, "{t}b", std::string(400, 'y'));
  std::string wire;
  RoutedCommand c = msets.flush(5, wire);
  c.wire = wire;
  EXPECT_EQ(c.key, binary);
  c.hops = 2;

  auto sets = split_mset(c);
  ASSERT_TRUE(sets.ok()) << sets.status().message();
  ASSERT_EQ(sets->size(), 2u);
  EXPECT_EQ((*sets)[0].wire, resp::command({"SET", binary, "x"}));
  EXPECT_EQ((*sets)[0].index, 40u);
  EXPECT_EQ((*sets)[0].key, binary);
  EXPECT_EQ((*sets)[0].bytes, 5u);
  EXPECT_EQ((*sets)[1].wire, resp::command({"SET", "{t}b", std::string(400, 'y')}));
  EXPECT_EQ((*sets)[1].index, 41u);
  for (const RoutedCommand& s : *sets) {
    EXPECT_EQ(s.slot, 5);
    EXPECT_EQ(s.hops, 2u);
    EXPECT_EQ(s.keys(), 1u);
  }
}

TEST(SlotMsetsTest, SplittingWhatIsNotTheMsetItClaimsIsAnError) {
  RoutedCommand c;
  c.indices = {1, 2};
  c.wire = resp::command({"MSET", "a", "1"});  // one pair, two records
  EXPECT_FALSE(split_mset(c).ok());
  c.wire = resp::command({"DEL", "a", "1", "b"});
  EXPECT_FALSE(split_mset(c).ok());
  c.wire = resp::command({"MSET", "a", "1", "b", "2"}) + "*1\r\n";
  EXPECT_FALSE(split_mset(c).ok());
  c.wire = "*5\r\n$4\r\nMSET";  // cut short
  EXPECT_FALSE(split_mset(c).ok());
}

}  // namespace
}  // namespace rrs
