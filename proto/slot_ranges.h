// A set of Redis Cluster hash slots (0 .. kHashSlots - 1) as inclusive ranges:
// which slots a shard owns, written "0-5460,5461-10922" as a peer's ready
// line or table carries it and CLUSTER SLOTS reports it. Used to check that
// the source shards own every slot exactly once before records are routed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "proto/hash_slot.h"

namespace rrs {

struct SlotRange {
  uint16_t first = 0;  // inclusive
  uint16_t last = 0;   // inclusive, >= first
  bool operator==(const SlotRange&) const = default;
};

class SlotRanges {
 public:
  SlotRanges() = default;  // no slots
  // Every slot, 0-16383.
  static SlotRanges all();
  // [first, last]; empty if first > last or first >= kHashSlots (last is
  // clamped to the last slot).
  static SlotRanges of(uint16_t first, uint16_t last);

  // Parses text from a peer: comma-separated ranges "A-B" (A <= B) or single
  // slots "A", in increasing order without overlaps (adjacent ones are
  // merged), each number decimal without sign or leading zeros and below
  // kHashSlots; "" is the empty set. Anything else is refused as kBadData.
  // Linear in the text; as the slots must increase, a valid text has at
  // most kHashSlots ranges (about 90 KiB).
  static Result<SlotRanges> parse(std::string_view text);
  // The text parse() reads back: maximal ranges, "A" for a single slot.
  std::string to_string() const;

  // Adds [first, last] (first <= last < kHashSlots), merging what it touches.
  void add(SlotRange range);
  // This set and `other` together.
  SlotRanges united(const SlotRanges& other) const;
  // Every slot not in this set.
  SlotRanges complement() const;

  bool contains(uint16_t slot) const;
  // Whether a slot is in both sets.
  bool overlaps(const SlotRanges& other) const;
  bool covers_all() const;
  bool empty() const { return ranges_.empty(); }
  // How many slots.
  uint32_t count() const;

  // Sorted, disjoint and not adjacent (merged).
  const std::vector<SlotRange>& ranges() const { return ranges_; }
  bool operator==(const SlotRanges&) const = default;

 private:
  std::vector<SlotRange> ranges_;
};

}  // namespace rrs
