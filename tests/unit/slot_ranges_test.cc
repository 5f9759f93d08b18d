#include "proto/slot_ranges.h"

#include <gtest/gtest.h>

#include <string>

namespace rrs {
namespace {

SlotRanges parsed(const std::string& text) {
  auto r = SlotRanges::parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : SlotRanges();
}

TEST(SlotRanges, ParsesAndFormats) {
  EXPECT_EQ(parsed("0-5460").to_string(), "0-5460");
  EXPECT_EQ(parsed("0-100,200,300-16383").to_string(), "0-100,200,300-16383");
  EXPECT_EQ(parsed("7").ranges(), (std::vector<SlotRange>{{7, 7}}));
  EXPECT_EQ(parsed("5-5").to_string(), "5");
  EXPECT_TRUE(parsed("").empty());
  EXPECT_EQ(parsed("").to_string(), "");
  // Adjacent ranges are one range: "0-5460,5461-10922" is what two shards' texts join to.
  EXPECT_EQ(parsed("0-5460,5461-10922").ranges(), (std::vector<SlotRange>{{0, 10922}}));
  EXPECT_EQ(parsed("0,1,2,3").to_string(), "0-3");
  EXPECT_EQ(parsed("0-16383"), SlotRanges::all());
}

TEST(SlotRanges, RefusesMalformedText) {
  for (const char* bad :
       {"-",   "1-",         "-1",     "16384", "0-16384", "99999", "123456",     "01",
        "00",  "+1",         " 1",     "1 ",    "1,",      ",1",    "1,,2",       "5-3",
        "3,1", "0-10,10-20", "0-10,5", "1-2-3", "a",       "1;2",   "4294967296", "0x10"}) {
    auto r = SlotRanges::parse(bad);
    EXPECT_FALSE(r.ok()) << '"' << bad << "\" parsed as " << r->to_string();
    if (!r.ok()) {
      EXPECT_EQ(r.status().kind(), ErrorKind::kBadData) << bad;
    }
  }
  std::string nul("1\0", 2);
  EXPECT_FALSE(SlotRanges::parse(nul).ok());
}

TEST(SlotRanges, ContainsAndCounts) {
  const SlotRanges s = parsed("0-10,100,16000-16383");
  for (int slot : {0, 5, 10, 100, 16000, 16383})
    EXPECT_TRUE(s.contains(static_cast<uint16_t>(slot))) << slot;
  for (int slot : {11, 99, 101, 15999})
    EXPECT_FALSE(s.contains(static_cast<uint16_t>(slot))) << slot;
  EXPECT_EQ(s.count(), 11u + 1 + 384);
  EXPECT_EQ(SlotRanges::all().count(), kHashSlots);
  EXPECT_EQ(SlotRanges().count(), 0u);
  EXPECT_FALSE(SlotRanges().contains(0));
}

TEST(SlotRanges, OfClampsAndRefusesEmpty) {
  EXPECT_EQ(SlotRanges::of(10, 20).to_string(), "10-20");
  EXPECT_EQ(SlotRanges::of(16000, 65535).to_string(), "16000-16383");
  EXPECT_TRUE(SlotRanges::of(20, 10).empty());
  EXPECT_TRUE(SlotRanges::of(16384, 16390).empty());
}

TEST(SlotRanges, AddMerges) {
  SlotRanges s;
  s.add({10, 20});
  s.add({30, 40});
  EXPECT_EQ(s.to_string(), "10-20,30-40");
  s.add({21, 29});  // fills the gap, touching both
  EXPECT_EQ(s.to_string(), "10-40");
  s.add({0, 5});
  s.add({50, 60});
  s.add({3, 55});  // overlaps three ranges
  EXPECT_EQ(s.to_string(), "0-60");
  s.add({100, 100});
  s.add({99, 99});
  EXPECT_EQ(s.to_string(), "0-60,99-100");
  s.add({5, 2});          // backwards: ignored
  s.add({16383, 16384});  // past the last slot: ignored
  EXPECT_EQ(s.to_string(), "0-60,99-100");
}

TEST(SlotRanges, UnionOverlapAndCover) {
  const SlotRanges a = parsed("0-5460"), b = parsed("5461-10922"), c = parsed("10923-16383");
  EXPECT_FALSE(a.overlaps(b));
  EXPECT_FALSE(b.overlaps(c));
  EXPECT_FALSE(a.united(b).covers_all());
  EXPECT_TRUE(a.united(b).united(c).covers_all());
  EXPECT_EQ(a.united(b).complement(), c);
  EXPECT_TRUE(a.overlaps(parsed("5000-6000")));
  EXPECT_TRUE(parsed("1,3,5").overlaps(parsed("2-3")));
  EXPECT_FALSE(parsed("1,3,5").overlaps(parsed("2,4,6-100")));
  EXPECT_FALSE(SlotRanges().overlaps(SlotRanges::all()));
  EXPECT_FALSE(SlotRanges().covers_all());
  EXPECT_EQ(SlotRanges().complement(), SlotRanges::all());
  EXPECT_TRUE(SlotRanges::all().complement().empty());
  EXPECT_EQ(parsed("0,16383").complement().to_string(), "1-16382");
  EXPECT_EQ(parsed("5-10").complement().to_string(), "0-4,11-16383");
}

// The longest valid text: every other slot, 8192 ranges.
TEST(SlotRanges, ManyRangesRoundTrip) {
  SlotRanges s;
  for (uint16_t slot = 0; slot < kHashSlots; slot += 2) s.add({slot, slot});
  EXPECT_EQ(s.ranges().size(), 8192u);
  EXPECT_EQ(parsed(s.to_string()), s);
  EXPECT_TRUE(s.united(s.complement()).covers_all());
  EXPECT_FALSE(s.overlaps(s.complement()));
}

}  // namespace
}  // namespace rrs
