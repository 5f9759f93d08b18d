// Reads keys' logical state from one server in batches, pipelined: three
// round trips per batch whatever its size (TYPE and PTTL; the value; the
// hash fields' TTLs), so a million keys take seconds of round trips, not
// hours. read_both() overlaps the source's round trips with the target's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "client/verify/key_state.h"
#include "common/redis/redis_client.h"

namespace rrs::verify {

class KeyReader {
 public:
  // Asks the server once whether it has hash field TTLs (HPEXPIRETIME:
  // Redis 7.4+, Valkey 9.0+); without them every field's TTL is "none".
  static Result<KeyReader> open(RedisClient client, std::string side);

  Status select(uint32_t db);
  RedisClient& client() { return client_; }
  const std::string& side() const { return side_; }
  bool field_ttls() const { return field_ttls_; }

  // The three steps of a batch, each an append then a take, so two readers
  // can have their commands in flight at once. `states` has one per key.
  void append_types(std::span<const std::string> keys);
  Status take_types(std::vector<KeyState>& states);
  void append_values(std::span<const std::string> keys, const std::vector<KeyState>& states);
  Status take_values(std::vector<KeyState>& states);
  void append_field_ttls(std::span<const std::string> keys, const std::vector<KeyState>& states);
  Status take_field_ttls(std::vector<KeyState>& states);

 private:
  KeyReader(RedisClient client, std::string side, bool field_ttls)
      : client_(std::move(client)), side_(std::move(side)), field_ttls_(field_ttls) {}
  Result<ReplyPtr> reply(const char* step);

  RedisClient client_;
  std::string side_;  // "source" or "target", for messages
  bool field_ttls_;
};

// Reads `keys` (in the DB each reader has selected) from both sides.
Status read_both(KeyReader& source, KeyReader& target, std::span<const std::string> keys,
                 std::vector<KeyState>& source_states, std::vector<KeyState>& target_states);

}  // namespace rrs::verify
