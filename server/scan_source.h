// Snapshot by SCAN + pipelined DUMP and PEXPIRETIME on every non-empty DB.
// Not a point-in-time snapshot: keys written during the walk may or may not be
// in it. Expiries are absolute (PEXPIRETIME, Redis >= 7.0; PTTL + our clock
// before that), so a record's TTL does not drift while the table is served.
#pragma once

#include <chrono>
#include <deque>
#include <string>

#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"
#include "server/snapshot_source.h"

namespace rrs {

struct ScanOptions {
  uint32_t count = 1000;  // SCAN COUNT hint: keys per round trip
  std::chrono::milliseconds timeout{30000};
};

class ScanSource final : public SnapshotSource {
 public:
  ScanSource(Endpoint master, RedisCredentials creds, ScanOptions opts)
      : master_(std::move(master)), creds_(std::move(creds)), opts_(opts) {}
  Result<SnapshotStats> snapshot(TableBuilder& into) override;

 private:
  // SELECTs `db` (`expected` keys, as INFO keyspace counted them), then
  // collect_keys() and dump_keys() into `into`.
  Status scan_db(RedisClient& redis, uint32_t db, uint64_t expected, bool absolute_expiry,
                 TableBuilder& into, SnapshotStats& stats);
  // Pass 1: every key name in the selected DB, once each.
  Result<std::deque<std::string>> collect_keys(RedisClient& redis, uint64_t expected);
  // Pass 2: DUMP and the expiry of each key, added to `into`; keys gone
  // since pass 1 count as vanished, keys whose DUMP failed as failed.
  Status dump_keys(RedisClient& redis, uint32_t db, const std::deque<std::string>& keys,
                   bool absolute_expiry, TableBuilder& into, SnapshotStats& stats);

  Endpoint master_;
  RedisCredentials creds_;
  ScanOptions opts_;
};

}  // namespace rrs
