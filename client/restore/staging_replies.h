// Reading the target's replies, for staging.cc and staging_swap.cc; not
// for anything outside --atomic's Staging.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/redis/redis_client.h"

namespace rrs::staging_replies {

inline std::string text(const redisReply* r) {
  return r && r->str ? std::string(r->str, r->len) : std::string();
}
inline bool is_error(const redisReply* r) { return r && r->type == REDIS_REPLY_ERROR; }

inline std::string join(const std::vector<uint32_t>& v) {
  std::string out;
  for (uint32_t x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// The replies to `n` pipelined commands; the first error reply of a command
// whose failure matters is the caller's business.
inline Result<std::vector<ReplyPtr>> replies(RedisClient& c, size_t n) {
  std::vector<ReplyPtr> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto r = c.get_reply();
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  return out;
}

}  // namespace rrs::staging_replies
