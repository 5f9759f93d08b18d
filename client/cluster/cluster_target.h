// The target cluster of `rdma-client --cluster`, shared by every source
// shard's sync: its slot map, its masters' version, and the one-time
// preparation of every master (emptiness or FLUSHALL, functions, Lua
// scripts) that must happen once however many shards load into it.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "client/client_config.h"
#include "client/cluster/slot_map.h"
#include "client/fetch/table_fetcher.h"
#include "common/redis/redis_client.h"
#include "proto/server_version.h"

namespace rrs {

class ClusterTarget {
 public:
  // Reads the slot map from the seed node (config.redis) and checks every
  // master: reachable, a server we know, every slot owned (cluster_state ok).
  static Result<std::unique_ptr<ClusterTarget>> connect(const ClientConfig& config);

  const RedisCredentials& credentials() const { return creds_; }
  std::chrono::milliseconds io_timeout() const { return io_timeout_; }
  // The masters' oldest version (by the newest RDB it reads): what every
  // payload must be converted for.
  const ServerVersion& oldest() const { return oldest_; }
  // A fresh slot map from any master that answers (the seed first); kUnavailable if none.
  Result<SlotMap> refresh_map() const;
  // The map as connect() read it.
  const SlotMap& first_map() const { return map_; }

  // The table can go into a cluster: its keys are all in DB 0 (a cluster
  // has no other), every master reads its payloads.
  Status check(const TableInfo& info) const;
  // Once for all shards: the emptiness check (or FLUSHALL with --flush) of
  // every master, then every master gets the first table's functions and Lua
  // scripts; a later shard's different functions are applied with REPLACE.
  Status prepare_once(const TableInfo& info);
  // Whether prepare_once() changed any master (for the incomplete line).
  bool touched() const;

 private:
  ClusterTarget(const ClientConfig& config, RedisCredentials creds)
      : config_(config), creds_(std::move(creds)) {}
  Status prepare_master(RedisClient& master, const TableInfo& info);

  const ClientConfig& config_;
  RedisCredentials creds_;
  std::chrono::milliseconds io_timeout_{30000};
  SlotMap map_;
  ServerVersion oldest_;
  mutable std::mutex mu_;
  bool prepared_ = false;
  bool touched_ = false;
  std::string functions_applied_;  // the FUNCTION DUMP payload every master has
};

}  // namespace rrs
