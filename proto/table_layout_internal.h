// What table_layout.cc (encoding) and table_layout_decode.cc share:
// internal to the layout, not an API.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rrs::table::detail {

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A slot's CRC32C: its header after the CRC field, then key and payload.
uint32_t slot_crc(std::span<const std::byte> slot_header, std::string_view key,
                  std::string_view payload);

}  // namespace rrs::table::detail
