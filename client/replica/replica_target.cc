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
      (*databases)->element[1]->type == REDIS_REPLY_STRING) {
    // A count that does not parse is not trusted either way: loading will say.
    const std::string_view text((*databases)->element[1]->str, (*databases)->element[1]->len);
    uint64_t have = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), have);
    if (ec == std::errc() && end == text.data() + text.size()) databases_ = have;
  }
  // A table still being written has no DB list yet: each record's DB is
  // checked as it comes (check_db).
  if (!info.dbs.empty()) RRS_RETURN_IF_ERROR(check_db(info.dbs.back().db));
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
  if (info_field(*repl, "role") == "slave")
    log::info("the target was a replica of " + info_field(*repl, "master_host") + ":" +
              info_field(*repl, "master_port") + "; it now replicates from this client");
  return {};
}

std::optional<bool> ReplicaTarget::replicates_over_tls() {
  auto r = redis_.command({"CONFIG", "GET", "tls-replication"});
  if (!r.ok() || (*r)->type != REDIS_REPLY_ARRAY) return std::nullopt;
  if ((*r)->elements != 2 || (*r)->element[1]->type != REDIS_REPLY_STRING) return false;
  return std::string_view((*r)->element[1]->str, (*r)->element[1]->len) == "yes";
}

Status ReplicaTarget::check_db(uint32_t db) const {
  if (!databases_ || db < *databases_) return {};
  return Status::error("check target Redis " + redis_.endpoint().to_string(),
                       "the table has keys in DB " + std::to_string(db) +
                           " but the target has only " + std::to_string(*databases_) +
                           " databases: raise its `databases` setting (a restart)")
      .as(ErrorKind::kRefused);
}

Result<TargetHistory> ReplicaTarget::replicate_from(const Endpoint& link) {
  const std::string step = "make the target a replica of " + link.to_string();
  auto repl = redis_.info("replication");
  if (!repl.ok()) return repl.status().wrap(step);
  if (info_field(*repl, "role") == "slave") {
    RRS_RETURN_IF_ERROR(redis_.command({"REPLICAOF", "NO", "ONE"}).status().wrap(step));
    repl = redis_.info("replication");
    if (!repl.ok()) return repl.status().wrap(step);
  }
  TargetHistory h;
  h.replid = info_field(*repl, "master_replid");
  const std::string offset = info_field(*repl, "master_repl_offset");
  auto [end, ec] = std::from_chars(offset.data(), offset.data() + offset.size(), h.offset);
  if (h.replid.empty() || offset.empty() || ec != std::errc() ||
      end != offset.data() + offset.size())
    return Status::error(step, "its INFO replication has no master_replid/master_repl_offset "
                               "(Redis before 4.0?), so its PSYNC could not be told from any "
                               "other process's: use --mode restore")
        .as(ErrorKind::kRefused);
  RRS_RETURN_IF_ERROR(
      redis_.command({"REPLICAOF", link.host, std::to_string(link.port)}).status().wrap(step));
  return h;
}

Status ReplicaTarget::verify_synced(std::string_view replid, uint64_t offset) {
  const std::string step = "check that the target " + redis_.endpoint().to_string() + " synced";
  auto repl = redis_.info("replication");
  if (!repl.ok()) return repl.status().wrap(step).as(ErrorKind::kUnavailable);
  const std::string role = info_field(*repl, "role");
  const std::string got_replid = info_field(*repl, "master_replid");
  const std::string link = info_field(*repl, "master_link_status");
  const std::string got_offset = info_field(*repl, "master_repl_offset");
  uint64_t at = 0;
  auto [end, ec] = std::from_chars(got_offset.data(), got_offset.data() + got_offset.size(), at);
  const bool offset_ok = !got_offset.empty() && ec == std::errc() &&
                         end == got_offset.data() + got_offset.size() && at >= offset;
  if (role == "slave" && got_replid == replid && link == "up" && offset_ok) return {};
  return Status::error(step, "it reports role " + role + ", master_replid " + got_replid +
                                 ", master_repl_offset " + got_offset + ", master_link_status " +
                                 link + "; expected a replica of " + std::string(replid) +
                                 " at offset " + std::to_string(offset) +
                                 " or later with its link up (did another process take its "
                                 "place on the replica link? the log names the peers)")
      .as(ErrorKind::kFailed);
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
