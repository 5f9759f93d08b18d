#include "client/replica_sync.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include "client/progress.h"
#include "client/remote_table.h"
#include "client/target_checks.h"
#include "common/cli/exit_codes.h"
#include "common/base/log.h"
#include "common/net/socket.h"
#include "proto/rdb_writer.h"

namespace rrs {
namespace {

// RDB bytes gathered before a write to the target: large enough to make each
// send() worth its system call, small enough to keep the target busy early.
constexpr size_t kSendThreshold = 1u << 20;
// How often a target that is still loading is asked how far it got.
constexpr auto kLoadPoll = std::chrono::seconds(2);

int fail(const Status& s) {
  log::error(s.message());
  return exit_code::for_status(s);
}


struct ReplicaStats {
  uint64_t keys = 0;
  uint64_t bytes = 0;  // key + payload bytes
  std::map<uint32_t, uint64_t> per_db;
};

// The target, checked for a replica-mode sync: refusals are kRefused.
class ReplicaTarget {
 public:
  explicit ReplicaTarget(RedisClient client) : redis_(std::move(client)) {}
  RedisClient& redis() { return redis_; }

  // Empty (or --flush), not a cluster node, able to read the table. Warns if
  // it would write the RDB to disk before loading it.
  Status check(const TableInfo& info, TargetPolicy policy, bool& refused);
  // Its replication ID, as check() read it: what its PSYNC will name.
  const std::string& replid() const { return replid_; }
  Status replicate_from(const Endpoint& link) {
    return redis_.command({"REPLICAOF", link.host, std::to_string(link.port)}).status();
  }
  // REPLICAOF NO ONE; false when the target did not take it (e.g. it is gone).
  bool detach() {
    auto r = redis_.command({"REPLICAOF", "NO", "ONE"});
    return r.ok();
  }
  // Waits for the target to acknowledge `offset` on the link, for as long as
  // it keeps loading (a target that loads from disk first takes a while).
  Status wait_loaded(ReplicaLink& link, uint64_t offset, std::chrono::milliseconds io_timeout);

 private:
  RedisClient redis_;
  std::string replid_;
};

Status ReplicaTarget::check(const TableInfo& info, TargetPolicy policy, bool& refused) {
  refused = true;
  const std::string step = "check target Redis " + redis_.endpoint().to_string();
  auto server = redis_.info("server");
  if (!server.ok()) return server.status().wrap("inspect target");
  RRS_RETURN_IF_ERROR(check_target_reads(redis_, info_field(*server, "redis_version"), info));
  auto cluster = redis_.info("cluster");
  if (cluster.ok() && info_field(*cluster, "cluster_enabled") == "1")
    return Status::error(step, "it runs in cluster mode, where a node's master is the cluster's "
                               "business (REPLICAOF is refused): use --mode restore");
  auto held = keys_held(redis_);
  if (!held.ok()) return held.status();
  if (!held->empty() && policy == TargetPolicy::kRequireEmpty)
    return Status::error(step, "it is not empty (" + *held +
                                   "); as a replica it would drop all of that for the master's "
                                   "data: use --flush to allow it");
  // A replica whose RDB selects a DB it does not have exits (FATAL), so
  // refuse here rather than take the target down.
  auto databases = redis_.command({"CONFIG", "GET", "databases"});
  if (!databases.ok())
    log::warn("CONFIG GET refused (" + databases.status().reason() +
              "): the target's `databases` and `repl-diskless-load` go unchecked (give its "
              "Redis user +config|get)");
  if (databases.ok() && (*databases)->type == REDIS_REPLY_ARRAY && (*databases)->elements == 2 &&
      !info.dbs.empty()) {
    const uint64_t have = std::strtoull((*databases)->element[1]->str, nullptr, 10);
    if (info.dbs.back().db >= have)
      return Status::error(step, "the table has keys in DB " + std::to_string(info.dbs.back().db) +
                                     " but the target has only " + std::to_string(have) +
                                     " databases: raise its `databases` setting (a restart)");
  }
  refused = false;
  auto load = redis_.command({"CONFIG", "GET", "repl-diskless-load"});
  if (load.ok() && (*load)->type == REDIS_REPLY_ARRAY && (*load)->elements == 2) {
    const std::string mode((*load)->element[1]->str, (*load)->element[1]->len);
    if (mode == "disabled" || (mode == "on-empty-db" && !held->empty()))
      log::warn("the target will write the RDB to disk before loading it (repl-diskless-load " +
                mode + (mode == "disabled" ? "" : " and it is not empty") +
                "): set repl-diskless-load swapdb (or on-empty-db on an empty target) to load "
                "straight from the stream, twice as fast");
  }
  auto repl = redis_.info("replication");
  if (!repl.ok()) return repl.status().wrap("inspect target");
  replid_ = info_field(*repl, "master_replid");
  if (info_field(*repl, "role") == "slave")
    log::info("the target was a replica of " + info_field(*repl, "master_host") + ":" +
              info_field(*repl, "master_port") + "; it now replicates from this client");
  return {};
}

Status ReplicaTarget::wait_loaded(ReplicaLink& link, uint64_t offset,
                                  std::chrono::milliseconds io_timeout) {
  auto deadline = Clock::now() + io_timeout;
  while (true) {
    auto acked = link.wait_ack(offset, std::min(deadline, Clock::now() + kLoadPoll));
    if (!acked.ok()) return acked.status().wrap("wait for the target to load the RDB");
    if (*acked) return {};
    auto persistence = redis_.info("persistence");
    auto repl = redis_.info("replication");
    if (!persistence.ok() || !repl.ok())
      return Status::error("wait for the target to load the RDB", "it stopped answering")
          .as(ErrorKind::kUnavailable);
    if (info_field(*persistence, "loading") == "1" ||
        info_field(*repl, "master_sync_in_progress") == "1")
      deadline = Clock::now() + io_timeout;  // still at it
    if (Clock::now() >= deadline)
      return Status::error("wait for the target to load the RDB",
                           "no acknowledgement of offset " + std::to_string(offset) + " after " +
                               std::to_string(io_timeout.count() / 1000) +
                               " s, and it is not loading (its log says why)")
          .as(ErrorKind::kUnavailable);
  }
}

// Writes the RDB for the fetched records down the link as they arrive.
class RdbStreamer {
 public:
  RdbStreamer(const TableInfo& info, ReplicaLink& link, std::string_view replid, uint64_t offset)
      : info_(info), link_(link), writer_(static_cast<uint16_t>(info.header.rdb_version)) {
    writer_.aux("redis-ver", info.header.redis_version);
    writer_.aux("redis-bits", "64");
    writer_.aux("ctime", std::to_string(unix_us() / 1000000));
    writer_.aux("used-mem", "0");
    // The master forces a SELECT before the first command after a full
    // sync, so the stream that follows does not depend on this.
    writer_.aux("repl-stream-db", "0");
    writer_.aux("repl-id", replid);
    writer_.aux("repl-offset", std::to_string(offset));
    writer_.aux("aof-base", "0");
    for (const table::DbEntry& e : info.dbs) dbs_[e.db] = e;
  }

  Status begin() {
    RRS_RETURN_IF_ERROR(writer_.functions(info_.scripts.function_payload));
    return flush_if(0);
  }
  Status add(const RecordBatch& batch) {
    for (const Record& r : batch.records) {
      if (r.db != db_) {
        const table::DbEntry& e = dbs_[r.db];
        writer_.select_db(r.db, e.key_count, e.expires_count);
        db_ = r.db;
      }
      RRS_RETURN_IF_ERROR(writer_.key(r.key, r.payload, r.expire_at_ms));
      ++stats_.keys;
      ++stats_.per_db[r.db];
      stats_.bytes += r.key.size() + r.payload.size();
    }
    return flush_if(kSendThreshold);
  }
  Status end() {
    writer_.end();
    RRS_RETURN_IF_ERROR(flush_if(0));
    return link_.end_rdb();
  }
  const ReplicaStats& stats() const { return stats_; }
  uint64_t rdb_bytes() const { return writer_.bytes(); }

 private:
  Status flush_if(size_t threshold) {
    if (writer_.pending() == 0 || writer_.pending() < threshold) return {};
    return link_.send(writer_.take());
  }

  const TableInfo& info_;
  ReplicaLink& link_;
  rdb::RdbWriter writer_;
  std::map<uint32_t, table::DbEntry> dbs_;
  int64_t db_ = -1;
  ReplicaStats stats_;
};

Status load_lua_scripts(RedisClient& target, const table::Scripts& s) {
  // Redis 7 replicas no longer take scripts from the RDB; SCRIPT LOAD works
  // on a replica and on every version.
  for (const std::string& body : s.lua_scripts)
    RRS_RETURN_IF_ERROR(target.command({"SCRIPT", "LOAD", body}).status().wrap("load a Lua script"));
  return {};
}

}  // namespace

void explain_left_replica(std::string_view replid, uint64_t offset) {
  log::info("the target holds the master's history " + std::string(replid) + " up to offset " +
            std::to_string(offset) +
            " and is a replica whose master link is now down: REPLICAOF <master host> <port> "
            "continues it with a partial resync while the master's repl-backlog still reaches "
            "back to that offset (or run with --handoff); REPLICAOF NO ONE makes it a "
            "standalone copy");
}

int run_replica_sync(const ClientConfig& config, ReplicaSynced* synced) {
  const auto t0 = Clock::now();
  const auto io_timeout = std::chrono::milliseconds(config.io_timeout);
  auto creds = load_credentials(config.redis_auth_file, kClientAuthEnv);
  if (!creds.ok()) return fail(creds.status());
  auto client = RedisClient::connect(config.redis, *creds, io_timeout);
  if (!client.ok()) return fail(client.status().wrap("connect to the target"));
  ReplicaTarget target(std::move(*client));

  auto remote = open_remote_table(config, t0);
  if (!remote.ok()) return fail(remote.status());
  TableFetcher& fetcher = *(*remote)->fetcher;
  const TableInfo& info = (*remote)->info;
  const table::Header& h = info.header;
  const bool has_history = h.source_kind == table::SourceKind::kPsync;
  const std::string replid = has_history ? h.source_replid : random_run_id();  // a history of its own
  const uint64_t offset = has_history ? h.source_offset : 0;

  if (!has_history && (config.follow || config.handoff)) {
    log::error("the table was taken with rdma-server --source scan, which has no replication "
               "history to follow or hand off; use --source psync, or drop --follow/--handoff");
    return exit_code::kUsage;
  }
  bool refused = false;
  if (Status s = target.check(info, config.policy, refused); !s.ok()) {
    log::error(s.message());
    return refused ? exit_code::kRefused : exit_code::for_status(s);
  }
  // The link listens where the client's connection to the target comes from,
  // and takes a connection only from the target's address.
  const int fd = target.redis().fd();
  auto link = ReplicaLink::listen(local_host(fd), peer_host(fd), io_timeout);
  if (!link.ok()) return fail(link.status());

  Status fetch_status;
  Clock::time_point fetch_done;
  std::thread fetch_thread([&] {
    fetch_status = fetcher.run();
    fetch_done = Clock::now();
  });
  // Once the target was told to replicate from the link, a failure detaches
  // it again, so it does not keep retrying a link that is gone.
  bool attached = false;
  auto abandon = [&](const Status& s) {
    fetcher.cancel();
    if (fetch_thread.joinable()) fetch_thread.join();
    link->close();
    if (attached) {
      const bool detached = target.detach();
      log::error(s.message());
      log::error(std::string("the target ") + config.redis.to_string() +
                 " did not get the whole data set; " +
                 (detached ? "it was detached (REPLICAOF NO ONE)"
                           : "it could not be detached (REPLICAOF NO ONE failed: is it down?); "
                             "if it comes back it retries a link that is gone, so run "
                             "REPLICAOF NO ONE on it") +
                 ". A replica drops an incomplete transfer and keeps what it held before; its "
                 "log and INFO keyspace say what it holds now");
      return exit_code::for_status(s);
    }
    return fail(s);
  };

  if (Status s = target.replicate_from(link->endpoint()); !s.ok())
    return abandon(s.wrap("make the target a replica of " + link->endpoint().to_string()));
  attached = true;
  if (Status s = link->accept_full_sync(replid, offset, target.replid(), Clock::now() + io_timeout);
      !s.ok())
    return abandon(s);
  log::info("the target connected (" + link->psync_request() + "); streaming it an RDB of " +
            std::to_string(h.record_count) + " keys as a full resync to " + replid + " offset " +
            std::to_string(offset));

  RdbStreamer rdb(info, *link, replid, offset);
  if (Status s = rdb.begin(); !s.ok()) return abandon(s);
  Progress progress(h.record_count, h.total_size, config.quiet);
  while (auto batch = (*remote)->queue.pop()) {
    if (Status s = rdb.add(*batch); !s.ok()) return abandon(s);
    progress.update(rdb.stats().keys, fetcher.bytes_read());
  }
  fetch_thread.join();
  if (!fetch_status.ok()) return abandon(fetch_status.wrap("fetch table"));
  if (!fetcher.failures().empty()) {
    for (const RecordFailure& f : fetcher.failures())
      log::error("record " + std::to_string(f.index) + " failed validation: " + f.reason);
    return abandon(Status::error("stream the RDB", std::to_string(fetcher.failures().size()) +
                                                       " records failed validation, and an RDB "
                                                       "without them would be a wrong replica")
                       .as(ErrorKind::kBadData));
  }
  progress.update(rdb.stats().keys, fetcher.bytes_read(), true);
  if (Status s = rdb.end(); !s.ok()) return abandon(s);
  if (Status s = target.wait_loaded(*link, offset, io_timeout); !s.ok()) return abandon(s);
  if (Status s = load_lua_scripts(target.redis(), info.scripts); !s.ok()) return fail(s);

  const ReplicaStats& st = rdb.stats();
  const double secs = seconds_since(t0);
  const double transfer_s = std::chrono::duration<double>(fetch_done - t0).count();
  std::printf("synced keys=%llu bytes=%llu dbs=%s functions=%u scripts=%zu skipped_expired=0 "
              "failed=0 seconds=%.3f transfer_s=%.3f MBps=%.1f keys_per_s=%.0f epoch=%llu "
              "mode=replica offset=%llu rdb_bytes=%llu\n",
              static_cast<unsigned long long>(st.keys), static_cast<unsigned long long>(st.bytes),
              db_counts(st.per_db).c_str(), info.scripts.function_libraries,
              info.scripts.lua_scripts.size(), secs, transfer_s,
              static_cast<double>(st.bytes) / 1e6 / secs, static_cast<double>(st.keys) / secs,
              static_cast<unsigned long long>(h.epoch), static_cast<unsigned long long>(offset),
              static_cast<unsigned long long>(rdb.rdb_bytes()));
  std::fflush(stdout);

  if (synced) {
    synced->table.header = h;
    synced->table.reader = std::move((*remote)->reader);
    synced->link = std::move(*link);
    return exit_code::kOk;
  }
  link->close();
  if (!has_history) {
    (void)target.detach();
    log::info("the table came from --source scan, which has no replication history to "
              "continue: the target was detached (REPLICAOF NO ONE) and is a standalone copy");
  } else {
    explain_left_replica(replid, offset);
  }
  return exit_code::kOk;
}

}  // namespace rrs
