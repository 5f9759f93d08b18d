#include "client/follow/follow.h"

#include <cstdio>
#include <thread>

#include "client/client_metrics.h"
#include "client/follow/follower.h"
#include "client/follow/stream_sink.h"
#include "client/replica/handoff.h"
#include "client/replica/replica_sink.h"
#include "client/restore/restore_sink.h"
#include "client/sync/sync_driver.h"
#include "common/base/log.h"
#include "common/metrics/readiness.h"

namespace rrs {
namespace {

// Between looks for the sidecar's next table.
constexpr auto kReconnectPause = std::chrono::seconds(1);

// Asks the sidecar for its descriptor every second until it serves a table
// other than `synced`'s; false if stopped first.
bool wait_for_new_table(const ClientConfig& config, SyncedTable& synced) {
  synced.reader->set_log_only(false);  // a table is what it wants now
  while (!stop_requested()) {
    std::this_thread::sleep_for(kReconnectPause);
    Status s = synced.reader->connect(Clock::now() + config.connect_timeout);
    if (s.ok() && synced.reader->descriptor().epoch != synced.header.epoch) return true;
  }
  return false;
}

// One round's full sync, in the configured mode, and the sink its stream
// goes to: the target's command connection (restore) or its replica link.
// Syncs in a row that may fail (unavailable) before --follow gives up.
constexpr int kMaxFailedRounds = 3;

struct Round {
  std::unique_ptr<ReplicaSink> replica;  // --mode replica: owns the link
  SyncedTable synced;
  std::unique_ptr<StreamSink> stream;
};

Status sync_round(const ClientConfig& config, const RedisCredentials& creds, Round& round) {
  if (config.mode == IngestMode::kReplica) {
    round.replica = std::make_unique<ReplicaSink>(config);
    RRS_ASSIGN_OR_RETURN(round.synced, run_sync(config, *round.replica));
    round.stream = std::make_unique<StreamForwarder>(round.replica->link(),
                                                     round.synced.header.source_offset);
    return {};
  }
  RestoreSink sink(config);
  RRS_ASSIGN_OR_RETURN(round.synced, run_sync(config, sink));
  auto target = RedisClient::connect(config.redis, creds, config.io_timeout);
  if (!target.ok())
    return target.status().wrap("connect to the target to follow").as(ErrorKind::kUnavailable);
  round.stream = std::make_unique<CommandSink>(std::move(*target),
                                               round.synced.header.source_offset,
                                               round.synced.header.source_stream_db,
                                               sink.take_ttl_guard());
  return {};
}

// --follow without --mode: replica mode, where the target holds only what
// the master's stream says (it expires nothing by its own clock), unless it
// cannot be a replica (a cluster node) or --atomic asks for restore mode.
Result<IngestMode> follow_mode(const ClientConfig& config, const RedisCredentials& creds) {
  if (config.mode_given || config.atomic) return config.mode;
  auto target = RedisClient::connect(config.redis, creds, config.io_timeout);
  if (!target.ok())
    return target.status().wrap("connect to the target").as(ErrorKind::kUnavailable);
  auto cluster = target->info("cluster");
  if (cluster.ok() && info_field(*cluster, "cluster_enabled") == "1") {
    log::info("--follow: the target is a cluster node, which cannot be a replica of the client: "
              "loading and following in restore mode");
    return IngestMode::kRestore;
  }
  log::info("--follow: loading and following in replica mode (the target expires nothing by its "
            "own clock; give --mode restore to load with RESTORE instead)");
  return IngestMode::kReplica;
}

bool unavailable(const Status& s) {
  return s.kind() == ErrorKind::kUnavailable || s.kind() == ErrorKind::kDenied;
}

}  // namespace

Status run_follow(const ClientConfig& config) {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds,
                       load_credentials(config.redis_auth_file, kClientAuthEnv, config.redis_tls));
  if (config.handoff) {
    RRS_ASSIGN_OR_RETURN(bool done, already_handed_off(config, creds));
    if (done) {
      log::info("the target is already a replica of " + config.master.to_string() +
                " with its link up: nothing to do");
      return {};
    }
  }
  ClientConfig sync_config = config;
  if (config.follow) {
    RRS_ASSIGN_OR_RETURN(sync_config.mode, follow_mode(config, creds));
  }
  int failed_rounds = 0;
  for (uint64_t resyncs = 0;; ++resyncs) {
    if (resyncs > 0) client_metrics().resyncs.add();
    metrics::set_readiness(false, resyncs > 0 ? "resyncing from the newest table"
                                              : "loading the first table");
    catch_stop_signals(false);
    Round round;
    Status synced = sync_round(sync_config, creds, round);
    // A round that replaces the target's data anyway (a resync, or --flush)
    // may simply start over when it was cut short: e.g. the sidecar published
    // a newer table mid-transfer.
    if (!synced.ok() && unavailable(synced) && sync_config.policy == TargetPolicy::kFlush &&
        ++failed_rounds < kMaxFailedRounds && !stop_requested()) {
      client_metrics().failed(synced);
      log::warn(synced.message() +
                "; the sync did not finish; starting it over from the newest "
                "table (attempt " +
                std::to_string(failed_rounds + 1) + " of " + std::to_string(kMaxFailedRounds) +
                ")");
      continue;
    }
    RRS_RETURN_IF_ERROR(synced);
    failed_rounds = 0;
    // A resync replaces what an earlier round loaded.
    sync_config.policy = TargetPolicy::kFlush;
    catch_stop_signals(true);
    if (stop_requested()) return {};
    SyncedTable& table = round.synced;
    if (config.handoff && table.reader->descriptor().log_id == 0) {
      log::info("rdma-server keeps no change log: handing off at the table's offset");
      return hand_off(config, table.header.source_replid, round.replica->link(),
                      table.header.source_offset);
    }

    Follower follower(config, table, *round.stream, resyncs);
    metrics::set_readiness(true, "loaded epoch " + std::to_string(table.header.epoch) +
                                     ", following the master's stream");
    RRS_ASSIGN_OR_RETURN(FollowEnd end, follower.run());
    if (end.stopped) {
      if (sync_config.mode == IngestMode::kReplica)
        explain_left_replica(table.header.source_replid, round.stream->applied());
      return {};
    }
    if (end.caught_up)
      return hand_off(config, table.header.source_replid, round.replica->link(),
                      round.stream->applied());
    if (!end.wait_for_new_table) {
      log::warn(end.why + "; resyncing from the newest table");
      continue;
    }
    log::warn(end.why + "; asking rdma-server for a new snapshot");
    if (!wait_for_new_table(config, table)) return {};
  }
}

}  // namespace rrs
