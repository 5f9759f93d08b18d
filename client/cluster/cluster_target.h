// The target cluster of `rdma-client --cluster`, shared by every source
// shard's sync: its slot map, its masters' version, and the one-time
// preparation of every master (emptiness or FLUSHALL, functions, Lua
// scripts) that must happen once however many shards load into it.
#pragma once

#include <condition_variable>
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
  // config.sidecars: the source shards that will load into it.
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

  // Shard `shard`'s table can go into a cluster: its keys are all in DB 0
  // (a cluster has no other; a table still being written has no DB list
  // yet, and the sink checks each record instead). Records the slots its
  // table says it serves.
  Status check(size_t shard, const TableInfo& info);
  // The slots shard `shard`'s table serves, as check() recorded them; every
  // slot for a standalone source (its keys are all it has).
  SlotRanges slots_of(size_t shard) const;
  // Shard `shard` stopped; if before check(), no shard loads anything.
  void shard_gone(size_t shard);
  // Waits until every shard was checked (or one is gone), then checks the
  // tables together: the shards' slots cover each slot once (tables of
  // cluster sources). Then, once for all: the emptiness check (or FLUSHALL
  // with --flush) of every master, and every master gets the first table's
  // functions and Lua scripts; a later shard with other functions applies
  // them with REPLACE.
  Status prepare_once(const TableInfo& info);
  // Whether prepare_once() changed any master (for the incomplete line).
  bool touched() const;
  // Whether the user may run SET on the masters (restore_command.h), as
  // prepare_once() found: strings then go as SET instead of RESTORE.
  bool plain_strings() const { return plain_strings_; }

 private:
  ClusterTarget(const ClientConfig& config, RedisCredentials creds)
      : config_(config), creds_(std::move(creds)) {}
  Status prepare_masters(const TableInfo& info);
  Status prepare_master(RedisClient& master, const TableInfo& info);
  // Whether the shards' tables, all checked, cover every slot once.
  Status check_coverage() const;

  // Each source shard, as far as the target knows.
  struct Shard {
    enum class State { kPending, kChecked, kGone } state = State::kPending;
    std::optional<SlotRanges> slots;  // from its table
  };

  const ClientConfig& config_;
  RedisCredentials creds_;
  std::chrono::milliseconds io_timeout_{30000};
  SlotMap map_;
  ServerVersion oldest_;
  bool plain_strings_ = true;
  mutable std::mutex mu_;
  std::condition_variable all_checked_;
  std::vector<Shard> shards_;
  bool prepared_ = false;
  Status prepare_failure_;
  bool touched_ = false;
  std::string functions_applied_;  // the FUNCTION DUMP payload every master has
};

}  // namespace rrs
