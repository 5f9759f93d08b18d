// libFuzzer target: SlotRanges::parse (proto/slot_ranges.h), which reads the
// hash slots a peer says its shard serves ("0-5460,5461-10922").
//
// The whole input is parsed as one text. What parses must be a proper set
// (sorted, disjoint, merged ranges of slots below 16384), format to a text
// that parses back to the same set, and answer contains() and count() as
// its ranges say; its complement must be its exact opposite. The input is
// also split at its first '\n' into two texts: where both parse, the set
// operations on the pair must agree with each other.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/slot_ranges.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rrs::kHashSlots;
using rrs::SlotRange;
using rrs::SlotRanges;

void check_set(const SlotRanges& s) {
  uint32_t count = 0;
  int next_free = 0;  // slots below this are in an earlier range, or its neighbour
  for (const SlotRange& r : s.ranges()) {
    FUZZ_CHECK(r.first <= r.last && r.last < kHashSlots, "range " + s.to_string());
    FUZZ_CHECK(r.first > next_free || (next_free == 0 && r.first == 0),
               "ranges not sorted, disjoint and merged: " + s.to_string());
    next_free = r.last + 1;
    count += uint32_t{r.last} - r.first + 1;
    // contains() at and beside each end.
    FUZZ_CHECK(s.contains(r.first) && s.contains(r.last), "contains() misses an end");
    if (r.first > 0)
      FUZZ_CHECK(!s.contains(static_cast<uint16_t>(r.first - 1)),
                 "contains() a slot before a range");
    if (r.last + 1 < kHashSlots)
      FUZZ_CHECK(!s.contains(static_cast<uint16_t>(r.last + 1)), "contains() past a range");
  }
  FUZZ_CHECK(s.count() == count, "count() " + std::to_string(s.count()));
  FUZZ_CHECK(s.covers_all() == (count == kHashSlots), "covers_all()");

  const std::string text = s.to_string();
  auto again = SlotRanges::parse(text);
  FUZZ_CHECK(again.ok() && *again == s, "\"" + text + "\" does not parse back");

  const SlotRanges rest = s.complement();
  FUZZ_CHECK(rest.count() + count == kHashSlots && !rest.overlaps(s) &&
                 s.united(rest).covers_all() && rest.complement() == s,
             "complement of " + text + " is " + rest.to_string());
}

void check_pair(const SlotRanges& a, const SlotRanges& b) {
  const SlotRanges both = a.united(b);
  check_set(both);
  FUZZ_CHECK(both == b.united(a), "united() is not symmetric");
  FUZZ_CHECK(a.overlaps(b) == b.overlaps(a), "overlaps() is not symmetric");
  FUZZ_CHECK(a.overlaps(b) == (a.count() + b.count() > both.count()),
             "overlaps() disagrees with the counts of " + a.to_string() + " and " + b.to_string());
  // add(), range by range in reverse order, builds the same union.
  SlotRanges built = a;
  for (auto r = b.ranges().rbegin(); r != b.ranges().rend(); ++r) built.add(*r);
  FUZZ_CHECK(built == both, "add() builds " + built.to_string() + ", not " + both.to_string());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto s = SlotRanges::parse(in); s.ok()) check_set(*s);
  const size_t cut = in.find('\n');
  if (cut == std::string_view::npos) return 0;
  auto a = SlotRanges::parse(in.substr(0, cut));
  auto b = SlotRanges::parse(in.substr(cut + 1));
  if (a.ok() && b.ok()) check_pair(*a, *b);
  return 0;
}
