// CRC-16 as Redis Cluster hashes keys to slots: CRC-16/XMODEM, polynomial
// 0x1021, not reflected, init 0, no final xor ("123456789" -> 0x31c3).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrs {

// Extends `crc` (0 to start) over `len` bytes. crc16(crc16(0,a),b) == crc16(0,a||b).
uint16_t crc16(uint16_t crc, const void* data, size_t len);

}  // namespace rrs
