// A cluster node's CLUSTER SLOTS reply, checked field by field (a peer's
// bytes: ranges inside 0..16383, ports 1..65535, bounded addresses), and the
// slots a node's shard serves. Parsing does no I/O.
//
// Reply: one entry per slot range, [first, last, master, replica...], each
// node [ip, port, id, ...]. Redis 7.0 to 8.x and Valkey 8 and 9 all answer it.
#pragma once

#include <hiredis/read.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"
#include "proto/slot_ranges.h"

namespace rrs {

struct ClusterNode {
  Endpoint at;     // host "?" when the node does not know an address to announce
  std::string id;  // its cluster node ID; "" when the reply has none
};

struct ClusterSlotsEntry {
  SlotRange slots;
  ClusterNode master;
  std::vector<ClusterNode> replicas;
};

// The entries of a CLUSTER SLOTS reply from `asked`: a node announced with
// an empty address is reached where `asked` was. kBadData for anything
// malformed.
Result<std::vector<ClusterSlotsEntry>> parse_cluster_slots(const redisReply& reply,
                                                           const Endpoint& asked);

// The slots the shard of `node` (a master, or one of its replicas) serves:
// nullopt when it does not run in cluster mode. Needs INFO, CLUSTER MYID and
// CLUSTER SLOTS.
Result<std::optional<SlotRanges>> shard_slots(RedisClient& node);

}  // namespace rrs
