// Choosing the slot size from the data (the seeds' "dynamic threshold").
//
// Rule: the slot size is the smallest multiple of 64 that holds the 48-byte
// slot header plus the key and payload of at least 95% of the records
// (kInlinePercentile), clamped to [64 B, 64 KiB]. The other records go to the
// heap. Every slot costs the same whether its record is inline or not, so
// a pure "fewest bytes" rule degenerates into tiny slots with everything in
// the heap; a percentile keeps nearly every record readable in one piece at
// its computed offset, while a few giant values cannot inflate every slot.
#pragma once

#include <cstdint>
#include <span>

namespace rrs::table {

inline constexpr uint32_t kInlinePercentile = 95;

struct SlotSizeChoice {
  uint32_t slot_size = 0;
  uint64_t inline_records = 0;
  uint64_t heap_records = 0;
  uint64_t heap_bytes = 0;   // heap region size (8-byte aligned records)
  uint64_t table_bytes = 0;  // slots + heap, excluding header/directory/padding
};

// `data_sizes` holds key_len + payload_len per record; it is sorted in place.
SlotSizeChoice choose_slot_size(std::span<uint64_t> data_sizes);

}  // namespace rrs::table
