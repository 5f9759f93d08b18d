// rdma-client --cluster --follow: the cluster sync, then every source
// shard's stream into the target cluster until SIGINT/SIGTERM. One follower
// per shard, on its own thread, tailing that shard's change log
// (client/follow/follower.h) into a ClusterStreamSink.
//
// A shard that can no longer be continued (its follower fell behind the
// log's ring, or its sidecar began a new history) stops every shard: its
// keys are spread over every target master, so it cannot be resynced alone
// without a flush of the whole target. Exit 3, saying to rerun with --flush.
#pragma once

#include "client/client_config.h"
#include "common/base/status.h"

namespace rrs {

// Ok after a signal; else the first shard's failure.
Status run_cluster_follow(const ClientConfig& config);

}  // namespace rrs
