// Lookup tables for slicing-by-8 of a reflected CRC (CRC-32C and Redis's
// CRC-64 both use it for their portable path), computed at compile time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace rrs {

// t[0] is the classic byte-at-a-time table; t[s] advances a byte s more
// positions, so eight bytes fold in with eight lookups.
template <typename Crc>
constexpr std::array<std::array<Crc, 256>, 8> slicing8_tables(Crc reflected_poly) {
  std::array<std::array<Crc, 256>, 8> t{};
  for (size_t i = 0; i < 256; ++i) {
    Crc c = static_cast<Crc>(i);
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ reflected_poly : c >> 1;
    t[0][i] = c;
  }
  for (size_t i = 0; i < 256; ++i)
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}

}  // namespace rrs
