// rdma-client --cluster: every source shard's table into a target cluster.
// One sync driver per sidecar, each on its own thread with its own
// ClusterSink (a pipeline per target master), sharing one ClusterTarget
// (the slot map, and the preparation done once). Each shard prints its own
// summary line; a `cluster-synced` line adds them up.
#pragma once

#include "client/client_config.h"
#include "common/base/status.h"

namespace rrs {

// The first failure of any shard (the others run to their end first).
Status run_cluster_sync(const ClientConfig& config);

}  // namespace rrs
