// rdma-client --cluster: every source shard's table into a target cluster.
// One sync driver per sidecar, each on its own thread with its own
// ClusterSink (a pipeline per target master), sharing one ClusterTarget
// (the slot map, and the preparation done once). Each shard prints its own
// summary line; a `cluster-synced` line adds them up.
#pragma once

#include <memory>
#include <vector>

#include "client/client_config.h"
#include "client/cluster/cluster_target.h"
#include "client/restore/ttl_guard.h"
#include "client/sync/sync_driver.h"
#include "common/base/status.h"

namespace rrs {

// What a cluster sync leaves for --follow: the target, and every shard's
// table (in config.sidecars' order) with its connection to the sidecar.
struct ClusterSynced {
  std::unique_ptr<ClusterTarget> target;
  std::vector<SyncedTable> tables;
  std::vector<TtlGuard> guards;  // --follow: each shard's keys held with a guard TTL
};

// The sync; the first failure of any shard (the others run to their end
// first). config.no_load: no target, no tables.
Result<ClusterSynced> sync_cluster(const ClientConfig& config);

// sync_cluster, and nothing kept.
Status run_cluster_sync(const ClientConfig& config);

}  // namespace rrs
