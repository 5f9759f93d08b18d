// The cluster slots the source node's shard serves, read when a snapshot is
// taken and carried in the table, so a client that loads every shard of a
// cluster (rdma-client --cluster) can check that the shards cover each slot
// once. A node not in cluster mode has none.
#pragma once

#include <optional>
#include <string>

#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"
#include "proto/slot_ranges.h"

namespace rrs {

// nullopt also when the node cannot be asked (said in a warning: the table
// then carries no slots, and a cluster-wide load cannot check its coverage).
std::optional<SlotRanges> read_shard_slots(const Endpoint& node, const RedisCredentials& creds);

// "0-5460", "none" (a cluster node serving no slot) or "-" (no cluster).
std::string slots_text(const std::optional<SlotRanges>& slots);

}  // namespace rrs
