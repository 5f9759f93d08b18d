// Test records shaped like Redis DUMP payloads (type byte, value, RDB
// version 10, 8 CRC bytes) without a Redis: the table does not decode them.
#pragma once

#include <string>

namespace rrs::test {

inline std::string fake_payload(size_t value_bytes, char fill) {
  std::string p(1, '\0');
  p += std::string(value_bytes, fill);
  p += std::string("\x0a\x00", 2);
  p += "CRC64xxx";
  return p;
}

}  // namespace rrs::test
