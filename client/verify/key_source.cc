#include "client/verify/key_source.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace rrs::verify {

Result<bool> KeyScan::next(std::vector<std::string>& batch) {
  batch.clear();
  while (!done_ && batch.size() < kBatchKeys) {
    auto r = client_.command({"SCAN", cursor_, "COUNT", std::to_string(kBatchKeys)});
    if (!r.ok()) return r.status().wrap("SCAN " + client_.endpoint().to_string());
    const redisReply& reply = **r;
    if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 ||
        reply.element[0]->type != REDIS_REPLY_STRING || reply.element[1]->type != REDIS_REPLY_ARRAY)
      return Status::error("SCAN " + client_.endpoint().to_string(), "unexpected reply")
          .as(ErrorKind::kBadData);
    cursor_.assign(reply.element[0]->str, reply.element[0]->len);
    done_ = cursor_ == "0";
    const redisReply& keys = *reply.element[1];
    for (size_t i = 0; i < keys.elements; ++i)
      if (keys.element[i]->type == REDIS_REPLY_STRING)
        batch.emplace_back(keys.element[i]->str, keys.element[i]->len);
  }
  return !batch.empty() || !done_;
}

Result<std::vector<std::string>> sample_keys(RedisClient& client, uint64_t n) {
  std::set<std::string> keys;
  uint64_t draws_left = 4 * n + 64;
  while (keys.size() < n && draws_left > 0) {
    const uint64_t round = std::min<uint64_t>({draws_left, n - keys.size() + 16, 1024});
    for (uint64_t i = 0; i < round; ++i) client.append({"RANDOMKEY"});
    draws_left -= round;
    bool empty = false;
    for (uint64_t i = 0; i < round; ++i) {
      auto r = client.get_reply();
      if (!r.ok()) return r.status().wrap("RANDOMKEY");
      if ((*r)->type == REDIS_REPLY_STRING)
        keys.emplace((*r)->str, (*r)->len);
      else
        empty = true;  // nil: the DB is empty now
    }
    if (empty && keys.empty()) break;
  }
  std::vector<std::string> out(keys.begin(), keys.end());
  if (out.size() > n) out.resize(n);
  return out;
}

uint64_t sample_share(uint64_t sample, uint64_t db_keys, uint64_t total) {
  if (total == 0) return 0;
  // In floating point: sample * db_keys may not fit 64 bits; a key more or
  // less in a share does not matter.
  const auto share = static_cast<uint64_t>(std::ceil(
      static_cast<double>(sample) * static_cast<double>(db_keys) / static_cast<double>(total)));
  return std::min(share, db_keys);
}

}  // namespace rrs::verify
