// FLUSHALL or FLUSHDB in one source shard's stream: that shard's keys are
// gone, the other shards' are not (each source master flushes only itself).
// On the target those keys are spread over masters that also hold other
// shards' keys, so a FLUSHALL there would be wrong; instead the keys of the
// shard's slots are deleted, slot by slot, on the master owning each. The
// other shards' followers never touch these slots, and this shard's follower
// sends nothing else meanwhile, so the result is what the source holds.
#pragma once

#include <cstdint>

#include "client/cluster/cluster_target.h"
#include "proto/slot_ranges.h"

namespace rrs {

// Deletes every key of `slots` from the target; how many it deleted.
Result<uint64_t> flush_slots(const ClusterTarget& target, const SlotRanges& slots);

}  // namespace rrs
