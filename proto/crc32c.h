// CRC-32C (Castagnoli), the checksum of the mapping table's header and records.
// Uses the SSE4.2 instruction where the CPU has it, a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrs {

// Extends `crc` (0 to start) over `len` bytes. crc32c(crc32c(0,a),b) == crc32c(0,a||b).
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace rrs
