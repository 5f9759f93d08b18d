// The rate limit on lines a peer can cause (common/base/log_limiter.h), on
// time points the test chooses.
#include "common/base/log_limiter.h"

#include <gtest/gtest.h>

namespace rrs::log {
namespace {

using std::chrono::milliseconds;

constexpr LogLimiter::Budget kBudget{3, milliseconds(1000)};
const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(1);

size_t written(LogLimiter& l, std::string_view category, int lines, Clock::time_point at) {
  size_t n = 0;
  for (int i = 0; i < lines; ++i) {
    const auto v = l.admit(category, Level::kWarn, at);
    EXPECT_FALSE(v.summary);
    n += v.write;
  }
  return n;
}

TEST(LogLimiterTest, WritesTheBurstThenHoldsBack) {
  LogLimiter l(kBudget);
  EXPECT_EQ(written(l, "refused", 100, kT0), 3u);
  EXPECT_EQ(l.next_due(), kT0 + milliseconds(1000));
}

TEST(LogLimiterTest, SummaryWhenTheIntervalEnds) {
  LogLimiter l(kBudget);
  written(l, "refused", 4000, kT0 + milliseconds(10));
  EXPECT_TRUE(l.take_due(kT0 + milliseconds(500)).empty());
  const auto due = l.take_due(kT0 + milliseconds(1010));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].msg, "... and 3997 more like it in the last 1 s (refused)");
  EXPECT_EQ(due[0].level, Level::kWarn);
  // Taken once; the category starts afresh with a whole burst.
  EXPECT_TRUE(l.take_due(kT0 + milliseconds(5000)).empty());
  EXPECT_EQ(l.next_due(), std::nullopt);
  EXPECT_EQ(written(l, "refused", 5, kT0 + milliseconds(5000)), 3u);
}

TEST(LogLimiterTest, SummaryBeforeTheNextLineAfterTheInterval) {
  LogLimiter l(LogLimiter::Budget{2, milliseconds(250)});
  written(l, "refused", 10, kT0);
  const auto v = l.admit("refused", Level::kWarn, kT0 + milliseconds(300));
  ASSERT_TRUE(v.summary);
  EXPECT_EQ(v.summary->msg, "... and 8 more like it in the last 250 ms (refused)");
  EXPECT_TRUE(v.write);
  EXPECT_TRUE(l.take_due(kT0 + milliseconds(400)).empty()) << "already said";
}

TEST(LogLimiterTest, NoSummaryWhenNothingWasHeldBack) {
  LogLimiter l(kBudget);
  EXPECT_EQ(written(l, "refused", 3, kT0), 3u);
  EXPECT_EQ(l.next_due(), std::nullopt);
  EXPECT_TRUE(l.take_due(kT0 + milliseconds(2000)).empty());
  EXPECT_FALSE(l.admit("refused", Level::kWarn, kT0 + milliseconds(2000)).summary);
}

TEST(LogLimiterTest, CategoriesHaveBudgetsOfTheirOwn) {
  LogLimiter l(kBudget);
  EXPECT_EQ(written(l, "refused", 10, kT0), 3u);
  EXPECT_EQ(written(l, "dropped", 10, kT0 + milliseconds(400)), 3u);
  EXPECT_EQ(l.next_due(), kT0 + milliseconds(1000));
  auto due = l.take_due(kT0 + milliseconds(1000));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_NE(due[0].msg.find("(refused)"), std::string::npos);
  EXPECT_EQ(l.next_due(), kT0 + milliseconds(1400));
  const auto all = l.take_all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].msg, "... and 7 more like it in the last 1 s (dropped)");
}

TEST(LogLimiterTest, SummaryTakesTheLevelOfTheLinesHeldBack) {
  LogLimiter l(LogLimiter::Budget{1, milliseconds(1000)});
  l.admit("connected", Level::kInfo, kT0);
  l.admit("connected", Level::kInfo, kT0);
  const auto all = l.take_all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].level, Level::kInfo);
}

}  // namespace
}  // namespace rrs::log
