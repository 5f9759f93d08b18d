// Which keys a verify run reads: every key of a DB by SCAN, in batches, or
// a random sample of them by RANDOMKEY.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/redis/redis_client.h"

namespace rrs::verify {

// Keys per batch: enough commands per round trip to hide its latency, few
// enough that a batch's replies (whole values) stay small.
inline constexpr size_t kBatchKeys = 256;

// SCAN over the selected DB of `client`. SCAN may return a key twice (when
// the server rehashes meanwhile); it never misses a key that stays.
class KeyScan {
 public:
  explicit KeyScan(RedisClient& client) : client_(client) {}
  // The next batch (about kBatchKeys keys); false when the scan is over.
  Result<bool> next(std::vector<std::string>& batch);

 private:
  RedisClient& client_;
  std::string cursor_ = "0";
  bool done_ = false;
};

// Up to `n` distinct keys of the selected DB, drawn by pipelined RANDOMKEY
// (fewer when the DB is small: at most 4n + 64 draws).
Result<std::vector<std::string>> sample_keys(RedisClient& client, uint64_t n);

// How many of `sample` keys to draw from a DB holding `db_keys` of `total`:
// in proportion, rounded up, never more than the DB holds.
uint64_t sample_share(uint64_t sample, uint64_t db_keys, uint64_t total);

}  // namespace rrs::verify
