// Choosing the slot size from the data (the seeds' "dynamic threshold").
//
// Rule: among the multiples of 64 in [64, 64 KiB], take the slot size S that
// makes the whole table smallest, where a record of d = key+payload bytes
// costs S in the slot array and, if d > S - 48, another round_up(d, 8) in the
// heap. Ties go to the smaller S. Every byte of the table is read once by a
// full sync, so total bytes is what a replica pays; uniform data lands all
// inline with < 64 bytes of padding, and a few giant values go to the heap
// instead of inflating every slot.
#pragma once

#include <cstdint>
#include <span>

namespace rrs::table {

struct SlotSizeChoice {
  uint32_t slot_size = 0;
  uint64_t inline_records = 0;
  uint64_t heap_records = 0;
  uint64_t heap_bytes = 0;
  uint64_t table_bytes = 0;  // slots + heap, excluding header/directory/padding
};

// `data_sizes` holds key_len + payload_len per record; it is sorted in place.
SlotSizeChoice choose_slot_size(std::span<uint64_t> data_sizes);

}  // namespace rrs::table
