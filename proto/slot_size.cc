#include "proto/slot_size.h"

#include <algorithm>

#include "proto/table_layout.h"

namespace rrs::table {

SlotSizeChoice choose_slot_size(std::span<uint64_t> data_sizes) {
  std::sort(data_sizes.begin(), data_sizes.end());
  const uint64_t n = data_sizes.size();
  SlotSizeChoice c;
  uint64_t want = 0;
  if (n > 0) {
    // Index of the record at the percentile (the smallest one that must fit).
    uint64_t at = (n * kInlinePercentile + 99) / 100;
    want = data_sizes[std::min(n, std::max<uint64_t>(at, 1)) - 1];
  }
  uint64_t s = (kSlotHeaderSize + want + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  c.slot_size = static_cast<uint32_t>(std::clamp<uint64_t>(s, kMinSlotSize, kMaxSlotSize));
  const uint64_t capacity = c.slot_size - kSlotHeaderSize;
  c.inline_records = std::upper_bound(data_sizes.begin(), data_sizes.end(), capacity) -
                     data_sizes.begin();
  c.heap_records = n - c.inline_records;
  for (uint64_t i = c.inline_records; i < n; ++i) c.heap_bytes += heap_footprint(data_sizes[i], 0);
  c.table_bytes = n * c.slot_size + c.heap_bytes;
  return c;
}

}  // namespace rrs::table
