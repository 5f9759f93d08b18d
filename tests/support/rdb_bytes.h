// Building RDB bytes by hand in tests: little-endian integers, RDB lengths
// and RDB strings, as rdb.c writes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proto/rdb_format.h"

namespace rrs::test {

// `bytes` bytes of `v`, little-endian (expiries, min TTLs, module ids).
inline std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}
// `n` in RDB length encoding.
inline std::string len(uint64_t n) {
  std::string s;
  rdb::append_length(s, n);
  return s;
}
// An RDB string: its length, then its bytes.
inline std::string str(std::string_view s) { return len(s.size()) + std::string(s); }

}  // namespace rrs::test
