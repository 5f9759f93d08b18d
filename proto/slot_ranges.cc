#include "proto/slot_ranges.h"

#include <algorithm>

namespace rrs {
namespace {

constexpr uint16_t kLastSlot = kHashSlots - 1;

Status bad(std::string_view text, const std::string& why) {
  constexpr size_t kQuoted = 64;  // the text is the peer's: quote only its start
  std::string quoted(text.substr(0, kQuoted));
  if (text.size() > kQuoted) quoted += "...";
  return Status::error("parse slot ranges \"" + quoted + "\"", why).as(ErrorKind::kBadData);
}

// A slot number at the front of `text`, consumed; -1 if there is none, it has
// a leading zero, or it is not below kHashSlots.
int take_slot(std::string_view& text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 5 || (digits > 1 && text[0] == '0')) return -1;
  int value = 0;
  for (size_t i = 0; i < digits; ++i) value = value * 10 + (text[i] - '0');
  text.remove_prefix(digits);
  return value < kHashSlots ? value : -1;
}

}  // namespace

SlotRanges SlotRanges::all() { return of(0, kLastSlot); }

SlotRanges SlotRanges::of(uint16_t first, uint16_t last) {
  SlotRanges s;
  if (first <= last && first < kHashSlots) s.ranges_.push_back({first, std::min(last, kLastSlot)});
  return s;
}

Result<SlotRanges> SlotRanges::parse(std::string_view text) {
  SlotRanges s;
  const std::string_view whole = text;
  int next_free = 0;  // the lowest slot the next range may start at
  while (!text.empty()) {
    if (!s.empty()) {
      if (text.front() != ',') return bad(whole, "expected ',' between ranges");
      text.remove_prefix(1);
    }
    const int first = take_slot(text);
    if (first < 0) return bad(whole, "expected a slot number from 0 to 16383");
    int last = first;
    if (!text.empty() && text.front() == '-') {
      text.remove_prefix(1);
      last = take_slot(text);
      if (last < 0) return bad(whole, "expected a slot number from 0 to 16383 after '-'");
      if (last < first) return bad(whole, "a range ends before it starts");
    }
    if (first < next_free) return bad(whole, "ranges out of order or overlapping");
    const auto range = SlotRange{static_cast<uint16_t>(first), static_cast<uint16_t>(last)};
    if (!s.empty() && first == next_free)
      s.ranges_.back().last = range.last;  // adjacent: one range
    else
      s.ranges_.push_back(range);
    next_free = last + 1;
  }
  return s;
}

std::string SlotRanges::to_string() const {
  std::string out;
  for (const SlotRange& r : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(r.first);
    if (r.last != r.first) out += '-' + std::to_string(r.last);
  }
  return out;
}

void SlotRanges::add(SlotRange range) {
  if (range.first > range.last || range.last > kLastSlot) return;
  // The ranges that touch [first, last] (overlap or adjacent) become one.
  auto lo = std::lower_bound(ranges_.begin(), ranges_.end(), range,
                             [](SlotRange a, SlotRange r) { return a.last + 1 < r.first; });
  auto hi = lo;
  while (hi != ranges_.end() && hi->first <= range.last + 1) {
    range.first = std::min(range.first, hi->first);
    range.last = std::max(range.last, hi->last);
    ++hi;
  }
  lo = ranges_.erase(lo, hi);
  ranges_.insert(lo, range);
}

SlotRanges SlotRanges::united(const SlotRanges& other) const {
  SlotRanges s = *this;
  for (const SlotRange& r : other.ranges_) s.add(r);
  return s;
}

SlotRanges SlotRanges::complement() const {
  SlotRanges s;
  int next = 0;
  for (const SlotRange& r : ranges_) {
    if (r.first > next)
      s.ranges_.push_back({static_cast<uint16_t>(next), static_cast<uint16_t>(r.first - 1)});
    next = r.last + 1;
  }
  if (next < kHashSlots) s.ranges_.push_back({static_cast<uint16_t>(next), kLastSlot});
  return s;
}

bool SlotRanges::contains(uint16_t slot) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), slot,
                             [](SlotRange r, uint16_t s) { return r.last < s; });
  return it != ranges_.end() && it->first <= slot;
}

bool SlotRanges::overlaps(const SlotRanges& other) const {
  auto a = ranges_.begin(), b = other.ranges_.begin();
  while (a != ranges_.end() && b != other.ranges_.end()) {
    if (a->last < b->first)
      ++a;
    else if (b->last < a->first)
      ++b;
    else
      return true;
  }
  return false;
}

bool SlotRanges::covers_all() const { return *this == all(); }

uint32_t SlotRanges::count() const {
  uint32_t n = 0;
  for (const SlotRange& r : ranges_) n += uint32_t{r.last} - r.first + 1;
  return n;
}

}  // namespace rrs
