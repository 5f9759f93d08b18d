#include "client/cluster/cluster_follow.h"

#include <thread>
#include <vector>

#include "client/cluster/cluster_stream_sink.h"
#include "client/cluster/cluster_sync.h"
#include "client/follow/follower.h"
#include "common/base/log.h"
#include "common/metrics/readiness.h"

namespace rrs {
namespace {

// Follows one shard until a stop, or until it cannot go on (then every
// other shard is stopped too).
Status follow_shard(const ClientConfig& config, ClusterTarget& target, size_t shard,
                    SyncedTable& table, TtlGuard guard) {
  RRS_ASSIGN_OR_RETURN(auto sink,
                       ClusterStreamSink::create(config, target, table.header.source_offset,
                                                 target.slots_of(shard), std::move(guard)));
  Follower follower(config, table, *sink, 0);
  RRS_ASSIGN_OR_RETURN(FollowEnd end, follower.run());
  if (end.stopped) return {};
  return Status::error("follow source shard " + config.server.to_string(),
                       end.why +
                           "; a shard of a cluster cannot be resynced alone (its keys are spread "
                           "over every target master): run rdma-client --cluster --follow again "
                           "with --flush")
      .as(ErrorKind::kUnavailable);
}

}  // namespace

Status run_cluster_follow(const ClientConfig& config) {
  catch_stop_signals(false);
  metrics::set_readiness(false, "loading the first tables");
  RRS_ASSIGN_OR_RETURN(ClusterSynced synced, sync_cluster(config));
  catch_stop_signals(true);
  if (stop_requested()) return {};
  metrics::set_readiness(true, "loaded " + std::to_string(synced.tables.size()) +
                                   " shards' tables, following their streams");
  std::vector<Status> results(synced.tables.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < synced.tables.size(); ++i) {
    threads.emplace_back([&, i] {
      ClientConfig shard = config;
      shard.server = config.sidecars[i];
      results[i] = follow_shard(shard, *synced.target, i, synced.tables[i],
                                std::move(synced.guards[i]));
      if (!results[i].ok()) request_stop();  // the others stop at their next batch
    });
  }
  for (std::thread& t : threads) t.join();
  Status first;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    log::error("shard " + config.sidecars[i].to_string() + ": " + results[i].message());
    if (first.ok()) first = results[i];
  }
  return first;
}

}  // namespace rrs
