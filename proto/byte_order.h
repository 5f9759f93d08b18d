// Explicit little-endian loads and stores for wire formats. Every multi-byte
// integer that crosses the network or sits in the mapping table goes through
// these, so the format does not depend on the host's byte order or alignment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace rrs::wire {

template <typename T>
inline T load_le(const std::byte* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

template <typename T>
inline void store_le(std::byte* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

inline uint16_t load_u16(const std::byte* p) { return load_le<uint16_t>(p); }
inline uint32_t load_u32(const std::byte* p) { return load_le<uint32_t>(p); }
inline uint64_t load_u64(const std::byte* p) { return load_le<uint64_t>(p); }
inline int64_t load_i64(const std::byte* p) { return static_cast<int64_t>(load_u64(p)); }
inline void store_u16(std::byte* p, uint16_t v) { store_le(p, v); }
inline void store_u32(std::byte* p, uint32_t v) { store_le(p, v); }
inline void store_u64(std::byte* p, uint64_t v) { store_le(p, v); }
inline void store_i64(std::byte* p, int64_t v) { store_u64(p, static_cast<uint64_t>(v)); }

// Fixed-width, NUL-padded ASCII field.
inline void store_text(std::byte* p, size_t width, const char* s, size_t len) {
  std::memset(p, 0, width);
  std::memcpy(p, s, len < width ? len : width);
}

// The text of a fixed-width, NUL-padded field.
inline std::string load_text(const std::byte* p, size_t width) {
  size_t n = 0;
  while (n < width && p[n] != std::byte{0}) ++n;
  return std::string(reinterpret_cast<const char*>(p), n);
}

inline bool is_printable(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

}  // namespace rrs::wire
