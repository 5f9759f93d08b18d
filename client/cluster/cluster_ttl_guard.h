// Restore-mode follow into a cluster: the TTL guard given back
// (client/restore/ttl_guard.h), once a shard's follower has caught up. Each
// guarded key whose TTL is still the guard's (the stream changed none of
// it) gets its own back, on the master owning its slot.
#pragma once

#include <cstdint>

#include "client/cluster/cluster_target.h"
#include "client/restore/ttl_guard.h"

namespace rrs {

// How many keys got their own TTL back.
Result<uint64_t> restore_guarded_ttls(const ClusterTarget& target, const TtlGuard& guard);

}  // namespace rrs
