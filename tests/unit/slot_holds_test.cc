// SlotHolds (client/cluster/slot_holds.h), the order keeper of cluster follow
// mode, with no target: which units of a slot may go at once, and in which
// order held ones are released.
#include "client/cluster/slot_holds.h"

#include <gtest/gtest.h>

#include <vector>

namespace rrs {
namespace {

RoutedCommand unit(uint16_t slot, uint64_t index, bool multi_key = false) {
  RoutedCommand c;
  c.slot = slot;
  c.index = index;
  c.multi_key = multi_key;
  return c;
}

// Releases what is due now, recording the indexes sent in order.
std::vector<uint64_t> release(SlotHolds& holds) {
  std::vector<uint64_t> sent;
  holds.release_due(Clock::now(), std::chrono::milliseconds(100), [&](SlotHolds::Held& h) {
    sent.push_back(h.command.index);
    return true;
  });
  return sent;
}

TEST(SlotHoldsTest, SingleKeyUnitsOfASlotArePipelined) {
  SlotHolds holds;
  EXPECT_FALSE(holds.must_wait(7, false));
  holds.sent(unit(7, 1));
  EXPECT_FALSE(holds.must_wait(7, false));
  holds.sent(unit(7, 2));
  EXPECT_FALSE(holds.must_wait(8, true));  // another slot: free
}

TEST(SlotHoldsTest, AMultiKeyUnitGoesAlone) {
  SlotHolds holds;
  holds.sent(unit(7, 1));
  EXPECT_TRUE(holds.must_wait(7, true));  // not behind one on its way
  holds.answered(7, 1);
  EXPECT_FALSE(holds.must_wait(7, true));
  holds.sent(unit(7, 2, true));
  EXPECT_TRUE(holds.must_wait(7, false));  // nothing behind it
  holds.answered(7, 2);
  EXPECT_FALSE(holds.must_wait(7, false));
}

TEST(SlotHoldsTest, HeldUnitsGoInStreamOrderOnceNothingIsOnItsWay) {
  SlotHolds holds;
  holds.sent(unit(7, 1));
  holds.sent(unit(7, 2));
  // 1 was redirected (TRYAGAIN): held; 3 and 4 queue behind it.
  holds.answered(7, 1);
  holds.hold({Clock::now(), unit(7, 1), std::nullopt});
  EXPECT_TRUE(holds.must_wait(7, false));
  holds.hold({Clock::now(), unit(7, 4), std::nullopt});
  holds.hold({Clock::now(), unit(7, 3), std::nullopt});
  EXPECT_TRUE(release(holds).empty());  // 2 is still on its way
  holds.answered(7, 2);
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_TRUE(holds.must_wait(7, false));  // released ones: later units queue
  for (uint64_t i : {1, 3, 4}) holds.answered(7, i);
  EXPECT_FALSE(holds.must_wait(7, false));
  EXPECT_TRUE(holds.empty());
}

TEST(SlotHoldsTest, ReleasesStopAtAMultiKeyUnitOrAnAsk) {
  SlotHolds holds;
  holds.hold({Clock::now(), unit(7, 1), std::nullopt});
  holds.hold({Clock::now(), unit(7, 2, true), std::nullopt});
  holds.hold({Clock::now(), unit(7, 3), Endpoint{"127.0.0.1", 7000}});
  holds.hold({Clock::now(), unit(7, 4), std::nullopt});
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{1}));
  holds.answered(7, 1);
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{2}));  // alone
  holds.answered(7, 2);
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{3}));  // ASK: alone
  holds.answered(7, 3);
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{4}));
}

TEST(SlotHoldsTest, AnUnreachableMasterKeepsItsUnitsHeld) {
  SlotHolds holds;
  holds.hold({Clock::now(), unit(7, 1), std::nullopt});
  const bool reached = holds.release_due(Clock::now(), std::chrono::milliseconds(0),
                                         [](SlotHolds::Held&) { return false; });
  EXPECT_FALSE(reached);
  EXPECT_FALSE(holds.empty());
  EXPECT_EQ(release(holds), (std::vector<uint64_t>{1}));
}

}  // namespace
}  // namespace rrs
