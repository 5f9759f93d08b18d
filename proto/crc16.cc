#include "proto/crc16.h"

#include <array>

namespace rrs {
namespace {

constexpr uint16_t kPoly = 0x1021;  // x^16 + x^12 + x^5 + 1, most significant bit first

// t[b]: the CRC of byte b shifted in at the top of a zero register. Keys are
// short (a few dozen bytes), so one table lookup per byte is enough; the
// slicing-by-8 tables of crc_tables.h are for reflected CRCs over megabytes.
constexpr std::array<uint16_t, 256> make_table() {
  std::array<uint16_t, 256> t{};
  for (size_t b = 0; b < 256; ++b) {
    auto c = static_cast<uint16_t>(b << 8);
    for (int k = 0; k < 8; ++k) c = static_cast<uint16_t>((c & 0x8000) ? (c << 1) ^ kPoly : c << 1);
    t[b] = c;
  }
  return t;
}
constexpr auto kTable = make_table();
static_assert(kTable[1] == kPoly);

}  // namespace

uint16_t crc16(uint16_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < len; ++i)
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ p[i]) & 0xff]);
  return crc;
}

}  // namespace rrs
