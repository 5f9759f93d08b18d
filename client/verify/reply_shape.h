// What --verify reads replies by: their RESP2 shapes (the connection never
// asks for RESP3). Pure; shared by the key and function library readers.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <string_view>

namespace rrs::verify {

inline bool is_text(const redisReply& r) {
  return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS;
}

// A text reply's bytes; empty for any other shape.
inline std::string_view text(const redisReply& r) {
  return is_text(r) ? std::string_view(r.str, r.len) : std::string_view();
}

inline bool is_array(const redisReply& r) { return r.type == REDIS_REPLY_ARRAY; }

// An array of alternating text names and values: a RESP2 map.
inline bool looks_like_map(const redisReply& r) {
  if (!is_array(r) || r.elements == 0 || r.elements % 2 != 0) return false;
  for (size_t i = 0; i < r.elements; i += 2)
    if (!is_text(*r.element[i])) return false;
  return true;
}

}  // namespace rrs::verify
