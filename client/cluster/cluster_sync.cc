#include "client/cluster/cluster_sync.h"

#include <cstdio>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "client/cluster/cluster_sink.h"
#include "client/cluster/cluster_target.h"
#include "client/sync/counting_sink.h"
#include "client/sync/sync_driver.h"
#include "common/base/clock.h"
#include "common/base/log.h"

namespace rrs {
namespace {

struct Shard {
  ClientConfig config;
  std::optional<ClusterSink> sink;
  SyncedTable synced;
  TtlGuard guard;
  Status status;
};

Status refuse_duplicates(const std::vector<Endpoint>& sidecars) {
  for (size_t i = 0; i < sidecars.size(); ++i)
    for (size_t j = i + 1; j < sidecars.size(); ++j)
      if (sidecars[i].to_string() == sidecars[j].to_string())
        return Status::error("--cluster", "sidecar " + sidecars[i].to_string() + " is named twice")
            .as(ErrorKind::kUsage);
  return {};
}

// A worse failure wins: the exit code should name what most needs fixing.
int severity(const Status& s) {
  switch (s.kind()) {
    case ErrorKind::kFailed: return 1;
    case ErrorKind::kUnavailable: return 2;
    default: return 3;
  }
}

// `cluster-synced` when every shard loaded everything, else `cluster-incomplete`.
void print_total(const std::vector<Shard>& shards, double seconds, bool complete) {
  uint64_t keys = 0, bytes = 0, failed = 0;
  std::map<std::string, uint64_t> per_master;
  for (const Shard& s : shards) {
    if (!s.sink) continue;
    const LoadCounts c = s.sink->counts();
    keys += c.keys;
    bytes += c.bytes;
    failed += c.failed;
    for (const auto& [node, n] : s.sink->per_master()) per_master[node] += n;
  }
  std::string masters;
  for (const auto& [node, n] : per_master)
    masters += (masters.empty() ? "" : ",") + node + "/" + std::to_string(n);
  std::printf("%s sources=%zu masters=%zu keys=%llu bytes=%llu failed=%llu "
              "seconds=%.3f keys_per_s=%.0f per_master=%s\n",
              complete ? "cluster-synced" : "cluster-incomplete", shards.size(), per_master.size(),
              static_cast<unsigned long long>(keys), static_cast<unsigned long long>(bytes),
              static_cast<unsigned long long>(failed), seconds,
              seconds > 0 ? static_cast<double>(keys) / seconds : 0.0,
              masters.empty() ? "-" : masters.c_str());
  std::fflush(stdout);
}

}  // namespace

Result<ClusterSynced> sync_cluster(const ClientConfig& config) {
  const auto t0 = Clock::now();
  RRS_RETURN_IF_ERROR(refuse_duplicates(config.sidecars));
  std::unique_ptr<ClusterTarget> target;
  if (!config.no_load) {
    RRS_ASSIGN_OR_RETURN(target, ClusterTarget::connect(config));
  }

  std::vector<Shard> shards(config.sidecars.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < shards.size(); ++i) {
    Shard& s = shards[i];
    s.config = config;
    s.config.server = config.sidecars[i];
    // One progress line per shard at once would be noise: the summary lines say it.
    s.config.quiet = config.quiet || shards.size() > 1;
    threads.emplace_back([&s, &target, i] {
      if (!target) {
        CountingSink counting;
        s.status = run_sync(s.config, counting).status();
        return;
      }
      s.sink.emplace(s.config, *target, i);
      auto synced = run_sync(s.config, *s.sink);
      s.status = synced.status();
      if (synced.ok()) s.synced = std::move(*synced);
      s.guard = s.sink->take_ttl_guard();
      // The others may wait for this shard's table before they load.
      target->shard_gone(i);
    });
  }
  for (std::thread& t : threads) t.join();

  Status worst;
  for (const Shard& s : shards) {
    if (s.status.ok()) continue;
    log::error("shard " + s.config.server.to_string() + ": " + s.status.message());
    if (worst.ok() || severity(s.status) > severity(worst)) worst = s.status;
  }
  if (target) print_total(shards, seconds_since(t0), worst.ok());
  RRS_RETURN_IF_ERROR(worst);
  ClusterSynced out;
  out.target = std::move(target);
  for (Shard& s : shards) {
    out.tables.push_back(std::move(s.synced));
    out.guards.push_back(std::move(s.guard));
  }
  return out;
}

Status run_cluster_sync(const ClientConfig& config) { return sync_cluster(config).status(); }

}  // namespace rrs
