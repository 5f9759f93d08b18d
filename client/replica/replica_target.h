// The target of a replica-mode sync, as the client drives it: checked
// (empty or --flush, not a cluster node, able to read the table), told
// REPLICAOF the client's link, watched while it loads, detached on failure.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "client/client_config.h"
#include "client/fetch/table_fetcher.h"
#include "client/replica/replica_link.h"
#include "common/redis/redis_client.h"
#include "proto/server_version.h"

namespace rrs {

// Refusals (the target cannot take the table as it is) have kind kRefused.
class ReplicaTarget {
 public:
  // `server`: its engine and version (target_server()).
  ReplicaTarget(RedisClient client, ServerVersion server)
      : redis_(std::move(client)), server_(server) {}
  RedisClient& redis() { return redis_; }
  const ServerVersion& server() const { return server_; }

  // Empty (or --flush), not a cluster node, able to read the table, with
  // every DB the table has (when its DB list is known yet). Warns if it
  // would write the RDB to disk before loading it.
  Status check(const TableInfo& info, TargetPolicy policy);
  // Whether it replicates over TLS (tls-replication yes): its replica link
  // must then be a TLS server. nullopt when CONFIG GET is refused; false
  // for a server built without TLS.
  std::optional<bool> replicates_over_tls();
  // Its `databases` setting as check() read it; nullopt when it could not.
  std::optional<uint64_t> databases() const { return databases_; }
  // kRefused when the target has no DB `db` (a replica whose RDB selects a
  // DB it does not have exits): for records of a table whose DB list was
  // not known at check().
  Status check_db(uint32_t db) const;
  // Tells it REPLICAOF `link` and returns the history its PSYNC will ask to
  // continue, read just before. A replica is detached first (REPLICAOF NO
  // ONE): one that never synced would send "PSYNC ? -1", which the link
  // cannot tell from any other local process; as a master it names its own
  // replication ID, like every target that was one.
  Result<TargetHistory> replicate_from(const Endpoint& link);
  // REPLICAOF NO ONE; false when the target did not take it (e.g. it is gone).
  bool detach() {
    auto r = redis_.command({"REPLICAOF", "NO", "ONE"});
    return r.ok();
  }
  // Waits for the target to acknowledge `offset` on the link, for as long as
  // it keeps loading (a target that loads from disk first takes a while).
  Status wait_loaded(ReplicaLink& link, uint64_t offset, std::chrono::milliseconds io_timeout);
  // The target's own word that it holds `replid` up to `offset` as a
  // replica whose link is up: an ACK on the link proves nothing when the
  // peer that sent it was not the target.
  Status verify_synced(std::string_view replid, uint64_t offset);

 private:
  RedisClient redis_;
  ServerVersion server_;
  std::optional<uint64_t> databases_;
};

}  // namespace rrs
