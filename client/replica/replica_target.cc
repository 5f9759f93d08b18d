#include "client/replica/replica_target.h"

#include <charconv>

#include "client/sync/target_checks.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// How often a target that is still loading is asked how far it got.
constexpr auto kLoadPoll = std::chrono::seconds(2);

}  // namespace

Status ReplicaTarget::check(const TableInfo& info, TargetPolicy policy) {
  const std::string step = "check target Redis " + redis_.endpoint().to_string();
  RRS_RETURN_IF_ERROR(check_target_reads(redis_, server_, info));
  auto cluster = redis_.info("cluster");
  if (cluster.ok() && info_field(*cluster, "cluster_enabled") == "1")
    return Status::error(step, "it runs in cluster mode, where a node's master is the cluster's "
                               "business (REPLICAOF is refused): use --mode restore")
        .as(ErrorKind::kRefused);
  auto held = keys_held(redis_);
  if (!held.ok()) return held.status();
  if (!held->empty() && policy == TargetPolicy::kRequireEmpty)
    return Status::error(step, "it is not empty (" + *held +
                                   "); as a replica it would drop all of that for the master's "
                                   "data: use --flush to allow it")
        .as(ErrorKind::kRefused);
  // A replica whose RDB selects a DB it does not have exits (FATAL), so
  // refuse here rather than take the target down.
  auto databases = redis_.command({"CONFIG", "GET", "databases"});
  if (!databases.ok())
    log::warn("CONFIG GET refused (" + databases.status().reason() +
              "): the target's `databases` and `repl-diskless-load` go unchecked (give its "
              "Redis user +config|get)");
  if (databases.ok() && (*databases)->type == REDIS_REPLY_ARRAY && (*databases)->elements == 2 &&
      (*databases)->element[1]->type == REDIS_REPLY_STRING && !info.dbs.empty()) {
    // A count that does not parse is not trusted either way: loading will say.
    const std::string_view text((*databases)->element[1]->str, (*databases)->element[1]->len);
    uint64_t have = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), have);
    if (ec == std::errc() && end == text.data() + text.size() && info.dbs.back().db >= have)
      return Status::error(step, "the table has keys in DB " + std::to_string(info.dbs.back().db) +
                                     " but the target has only " + std::to_string(have) +
                                     " databases: raise its `databases` setting (a restart)")
          .as(ErrorKind::kRefused);
  }
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

}  // namespace rrs
