// CRC-64 as Redis computes it for DUMP payload trailers and RDB file
// checksums: the Jones polynomial 0xad93d23594c935a9, reflected, init 0, no
// final xor ("123456789" -> 0xe9c6d914c4b8d9ca). Uses PCLMULQDQ folding where
// the CPU has it, slicing-by-8 tables otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rrs {

// Extends `crc` (0 to start) over `len` bytes. crc64(crc64(0,a),b) == crc64(0,a||b).
uint64_t crc64(uint64_t crc, const void* data, size_t len);

// crc64(0, a||b) from crc64(0,a), crc64(0,b) and b's length, in O(log len_b):
// lets checksums of pieces computed apart (threads, chunks) be joined.
uint64_t crc64_combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b);

// The implementations behind crc64(), so tests and bench/crc64_speed can run
// each one. crc64() picks the fastest available.
enum class Crc64Impl { kSlicing8, kPclmul };
const char* crc64_impl_name(Crc64Impl impl);
// kSlicing8 always; kPclmul on x86-64 CPUs with PCLMULQDQ and SSE4.1.
bool crc64_impl_available(Crc64Impl impl);
// Like crc64(), through `impl`; falls back to kSlicing8 if it is not available.
uint64_t crc64_using(Crc64Impl impl, uint64_t crc, const void* data, size_t len);

}  // namespace rrs
