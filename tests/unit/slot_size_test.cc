#include "proto/slot_size.h"

#include <gtest/gtest.h>

#include <vector>

#include "proto/table_layout.h"

namespace rrs::table {
namespace {

TEST(SlotSize, UniformRecordsAllFitInline) {
  std::vector<uint64_t> sizes(1000, 1014);  // 14-byte key + 1000-byte payload
  SlotSizeChoice c = choose_slot_size(sizes);
  EXPECT_EQ(c.slot_size, 1088u);  // 48 + 1014 = 1062, rounded up to 64
  EXPECT_EQ(c.heap_records, 0u);
  EXPECT_EQ(c.inline_records, 1000u);
}

TEST(SlotSize, AFewGiantValuesGoToTheHeap) {
  std::vector<uint64_t> sizes(10000, 100);
  sizes.push_back(9u << 20);
  sizes.push_back(200000);
  SlotSizeChoice c = choose_slot_size(sizes);
  EXPECT_EQ(c.slot_size, 192u);
  EXPECT_EQ(c.heap_records, 2u);
  EXPECT_EQ(c.heap_bytes, (9u << 20) + 200000u);
}

TEST(SlotSize, HoldsTheNinetyFifthPercentileInline) {
  // 90% small, 10% medium: the percentile lands on a medium record.
  std::vector<uint64_t> sizes;
  sizes.reserve(1000);
  for (int i = 0; i < 900; ++i) sizes.push_back(100);
  for (int i = 0; i < 100; ++i) sizes.push_back(1000);
  SlotSizeChoice c = choose_slot_size(sizes);
  EXPECT_EQ(c.slot_size, 1088u);
  EXPECT_EQ(c.heap_records, 0u);
  // 97% small, 3% medium: the medium ones go to the heap.
  sizes.clear();
  for (int i = 0; i < 970; ++i) sizes.push_back(100);
  for (int i = 0; i < 30; ++i) sizes.push_back(1000);
  c = choose_slot_size(sizes);
  EXPECT_EQ(c.slot_size, 192u);
  EXPECT_EQ(c.heap_records, 30u);
  EXPECT_EQ(c.table_bytes, 1000u * 192 + 30u * 1000);
}

TEST(SlotSize, EmptyAndTinyInputs) {
  std::vector<uint64_t> none;
  EXPECT_EQ(choose_slot_size(none).slot_size, kMinSlotSize);
  std::vector<uint64_t> one{1};
  EXPECT_EQ(choose_slot_size(one).slot_size, kMinSlotSize);
}

TEST(SlotSize, NeverAboveTheMaximum) {
  std::vector<uint64_t> sizes(50, 1u << 20);
  SlotSizeChoice c = choose_slot_size(sizes);
  EXPECT_LE(c.slot_size, kMaxSlotSize);
  EXPECT_EQ(c.heap_records, 50u);
}

}  // namespace
}  // namespace rrs::table
