#include "proto/slot_size.h"

#include <algorithm>
#include <vector>

#include "proto/table_layout.h"

namespace rrs::table {

SlotSizeChoice choose_slot_size(std::span<uint64_t> data_sizes) {
  std::sort(data_sizes.begin(), data_sizes.end());
  const uint64_t n = data_sizes.size();
  // heap_suffix[i] = heap bytes of records i..n-1 if all went to the heap.
  std::vector<uint64_t> heap_suffix(n + 1, 0);
  for (uint64_t i = n; i-- > 0;)
    heap_suffix[i] = heap_suffix[i + 1] + heap_footprint(data_sizes[i], 0);

  SlotSizeChoice best;
  for (uint32_t s = kMinSlotSize; s <= kMaxSlotSize; s += kSlotAlign) {
    uint64_t capacity = s - kSlotHeaderSize;
    uint64_t first_heap =
        std::upper_bound(data_sizes.begin(), data_sizes.end(), capacity) - data_sizes.begin();
    uint64_t bytes = n * s + heap_suffix[first_heap];
    if (best.slot_size == 0 || bytes < best.table_bytes) {
      best = {s, first_heap, n - first_heap, heap_suffix[first_heap], bytes};
    }
    if (first_heap == n) break;  // everything fits; larger slots only add padding
  }
  return best;
}

}  // namespace rrs::table
