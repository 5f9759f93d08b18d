#include "proto/hash_slot.h"

#include "proto/crc16.h"

namespace rrs {

static_assert((kHashSlots & (kHashSlots - 1)) == 0, "mod kHashSlots is a mask");

std::string_view hash_tag(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

uint16_t hash_slot(std::string_view key) {
  const std::string_view tag = hash_tag(key);
  return crc16(0, tag.data(), tag.size()) & (kHashSlots - 1);
}

}  // namespace rrs
