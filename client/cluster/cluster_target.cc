#include "client/cluster/cluster_target.h"

#include "client/restore/restore_command.h"

#include "client/sync/target_checks.h"
#include "common/base/log.h"

namespace rrs {

Result<std::unique_ptr<ClusterTarget>> ClusterTarget::connect(const ClientConfig& config) {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds,
                       load_credentials(config.redis_auth_file, kClientAuthEnv, config.redis_tls));
  std::unique_ptr<ClusterTarget> t(new ClusterTarget(config, std::move(creds)));
  t->shards_.resize(config.sidecars.size());
  t->io_timeout_ = std::chrono::milliseconds(config.io_timeout);
  const std::string step = "connect to the target cluster at " + config.redis.to_string();
  auto seed = RedisClient::connect(config.redis, t->creds_, t->io_timeout_);
  if (!seed.ok()) return seed.status().wrap(step).as(ErrorKind::kUnavailable);
  RRS_ASSIGN_OR_RETURN(t->map_, fetch_slot_map(*seed));
  if (const uint32_t unowned = t->map_.unowned_slots(); unowned > 0)
    return Status::error(step, std::to_string(unowned) +
                                   " hash slots have no master (CLUSTER SLOTS): the cluster "
                                   "must own all 16384 before it can take every key; fix it "
                                   "with redis-cli --cluster fix")
        .as(ErrorKind::kRefused);
  bool first = true;
  for (const Endpoint& m : t->map_.masters()) {
    auto c = RedisClient::connect(m, t->creds_, t->io_timeout_);
    if (!c.ok()) return c.status().wrap(step).as(ErrorKind::kUnavailable);
    RRS_ASSIGN_OR_RETURN(ServerVersion v, target_server(*c));
    if (first || v.newest_rdb() < t->oldest_.newest_rdb()) t->oldest_ = v;
    first = false;
  }
  log::info("target cluster: " + std::to_string(t->map_.masters().size()) + " masters, the " +
            "oldest " + t->oldest_.to_string());
  return t;
}

Result<SlotMap> ClusterTarget::refresh_map() const {
  std::vector<Endpoint> ask{config_.redis};
  for (const Endpoint& m : map_.masters()) ask.push_back(m);
  Status last;
  for (const Endpoint& node : ask) {
    auto c = RedisClient::connect(node, creds_, io_timeout_);
    if (!c.ok()) {
      last = c.status();
      continue;
    }
    auto map = fetch_slot_map(*c);
    if (map.ok() && map->unowned_slots() == 0) return map;
    last = map.ok() ? Status::error("read the slot map of " + node.to_string(),
                                    "some hash slots have no master")
                    : map.status();
  }
  return last.wrap("refresh the target cluster's slot map").as(ErrorKind::kUnavailable);
}

Status ClusterTarget::check(size_t shard, const TableInfo& info) {
  Status verdict;
  for (const table::DbEntry& db : info.dbs)
    if (db.db != 0 && db.key_count > 0) {
      verdict = Status::error("check the table for a cluster",
                              "it holds " + std::to_string(db.key_count) + " keys in DB " +
                                  std::to_string(db.db) +
                                  ", and a cluster has only DB 0; sync that master into a "
                                  "standalone target instead")
                    .as(ErrorKind::kRefused);
      break;
    }
  {
    std::lock_guard lock(mu_);
    shards_.at(shard).slots = info.scripts.hash_slots;
    // A table that cannot go in stops every shard before anything is loaded.
    shards_.at(shard).state = verdict.ok() ? Shard::State::kChecked : Shard::State::kGone;
  }
  all_checked_.notify_all();
  return verdict;
}

SlotRanges ClusterTarget::slots_of(size_t shard) const {
  std::lock_guard lock(mu_);
  const std::optional<SlotRanges>& slots = shards_.at(shard).slots;
  return slots ? *slots : SlotRanges::all();
}

void ClusterTarget::shard_gone(size_t shard) {
  {
    std::lock_guard lock(mu_);
    if (shards_.at(shard).state == Shard::State::kPending)
      shards_.at(shard).state = Shard::State::kGone;
  }
  all_checked_.notify_all();
}

Status ClusterTarget::check_coverage() const {
  const std::string step = "check the source shards' tables";
  size_t with_slots = 0;
  for (const Shard& s : shards_) with_slots += s.slots.has_value();
  if (with_slots == 0) {
    if (shards_.size() > 1)
      log::warn("no table carries cluster slots (standalone sources, or a sidecar that could "
                "not ask its node): each is loaded whole, and nothing checks that together they "
                "are one keyspace");
    return {};
  }
  SlotRanges seen;
  for (size_t i = 0; i < shards_.size(); ++i) {
    const std::string name = config_.sidecars[i].to_string();
    if (!shards_[i].slots)
      return Status::error(step, "the table of sidecar " + name +
                                     " carries no cluster slots while others do: it comes from "
                                     "a standalone server, or its sidecar could not ask its node "
                                     "(its log says why)")
          .as(ErrorKind::kRefused);
    if (seen.overlaps(*shards_[i].slots)) {
      const SlotRanges both = shards_[i].slots->intersected(seen);
      return Status::error(step, "slots " + both.to_string() +
                                     " are in more than one shard's table (sidecar " + name +
                                     " and another): two sidecars of one shard, or a cluster "
                                     "resharded while they took their tables")
          .as(ErrorKind::kRefused);
    }
    seen = seen.united(*shards_[i].slots);
  }
  if (!seen.covers_all())
    return Status::error(step, "slots " + seen.complement().to_string() +
                                   " are in no shard's table: give rdma-client a sidecar of "
                                   "every shard of the source cluster")
        .as(ErrorKind::kRefused);
  return {};
}

Status ClusterTarget::prepare_once(const TableInfo& info) {
  std::unique_lock lock(mu_);
  all_checked_.wait(lock, [&] {
    for (const Shard& s : shards_)
      if (s.state == Shard::State::kPending) return false;
    return true;
  });
  for (size_t i = 0; i < shards_.size(); ++i)
    if (shards_[i].state == Shard::State::kGone)
      return Status::error("load the target cluster",
                           "the sync from sidecar " + config_.sidecars[i].to_string() +
                               " failed before its table was checked, so no shard loads "
                               "anything")
          .as(ErrorKind::kUnavailable);
  // A preparation that failed part way is not tried again by the next shard:
  // every shard reports the same failure.
  if (!prepare_failure_.ok()) return prepare_failure_;
  if (prepared_ && info.scripts.function_payload == functions_applied_) return {};
  Status s = prepared_ ? Status() : check_coverage();
  if (s.ok()) s = prepare_masters(info);
  if (!s.ok()) {
    prepare_failure_ = s;
    return s;
  }
  prepared_ = true;
  functions_applied_ = info.scripts.function_payload;
  return {};
}

// By a fresh slot map: the masters may have changed since connect() (a
// failover while the sidecars were awaited).
Status ClusterTarget::prepare_masters(const TableInfo& info) {
  RRS_ASSIGN_OR_RETURN(SlotMap now, refresh_map());
  // Every master reached and checked before any is changed: one that is
  // down leaves the whole target untouched.
  std::vector<RedisClient> masters;
  for (const Endpoint& m : now.masters()) {
    const std::string step = "prepare target cluster master " + m.to_string();
    auto c = RedisClient::connect(m, creds_, io_timeout_);
    if (!c.ok()) return c.status().wrap(step).as(ErrorKind::kUnavailable);
    RRS_ASSIGN_OR_RETURN(ServerVersion v, target_server(*c));
    RRS_RETURN_IF_ERROR(check_target_reads(*c, v, info));
    masters.push_back(std::move(*c));
  }
  if (!masters.empty()) {
    RRS_ASSIGN_OR_RETURN(plain_strings_, may_write_plain_strings(masters[0]));
  }
  for (RedisClient& c : masters)
    RRS_RETURN_IF_ERROR(
        prepare_master(c, info).wrap("prepare target cluster master " + c.endpoint().to_string()));
  return {};
}

// First shard: empty or flushed, then functions by the policy, then Lua
// scripts. A later shard with other functions: REPLACE (the source
// cluster's shards disagreed; the last one wins, as it would on a replica).
Status ClusterTarget::prepare_master(RedisClient& master, const TableInfo& info) {
  const table::Scripts& s = info.scripts;
  if (!prepared_) {
    if (config_.policy == TargetPolicy::kFlush) {
      RRS_RETURN_IF_ERROR(master.command({"FLUSHALL"}).status());
      touched_ = true;
    } else if (config_.policy == TargetPolicy::kRequireEmpty) {
      RRS_ASSIGN_OR_RETURN(std::string held, keys_held(master));
      if (!held.empty())
        return Status::error("check the target cluster",
                             master.endpoint().to_string() + " is not empty (" + held +
                                 "); use --flush to FLUSHALL every master first, or --merge "
                                 "to load on top")
            .as(ErrorKind::kRefused);
    }
    for (const std::string& body : s.lua_scripts)
      if (auto r = master.command({"SCRIPT", "LOAD", body}); !r.ok())
        log::warn("SCRIPT LOAD on " + master.endpoint().to_string() +
                  " failed: " + r.status().message());
  } else {
    log::warn("the source shards carry different functions; " + master.endpoint().to_string() +
              " gets this shard's with REPLACE");
  }
  if (s.function_payload.empty()) {
    if (!prepared_ && config_.policy == TargetPolicy::kFlush)
      RRS_RETURN_IF_ERROR(master.command({"FUNCTION", "FLUSH"}).status());
    return {};
  }
  const char* mode = prepared_ || config_.policy == TargetPolicy::kMerge ? "REPLACE"
                     : config_.policy == TargetPolicy::kFlush            ? "FLUSH"
                                                                         : "APPEND";
  RRS_RETURN_IF_ERROR(master.command({"FUNCTION", "RESTORE", s.function_payload, mode})
                          .status()
                          .wrap("FUNCTION RESTORE " + std::string(mode)));
  touched_ = true;
  return {};
}

bool ClusterTarget::touched() const {
  std::lock_guard lock(mu_);
  return touched_;
}

}  // namespace rrs
