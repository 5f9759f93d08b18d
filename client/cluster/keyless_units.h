// The stream's units with no keys that still change the target, applied
// once everything before them is acknowledged (the caller waits first).
//
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
#include "client/cluster/stream_units.h"
#include "proto/slot_ranges.h"

namespace rrs {

// Deletes every key of `slots` from the target; how many it deleted.
Result<uint64_t> flush_slots(const ClusterTarget& target, const SlotRanges& slots);

// A keyless command the target marks for every shard (FUNCTION LOAD): sent
// to each master of a fresh slot map in turn. A refusal names the master,
// the unit and its stream offset (the masters before it applied it).
Status send_to_every_master(const ClusterTarget& target, const StreamUnit& unit);

}  // namespace rrs
