// --atomic's end: the staged DBs checked against what was loaded, swapped
// in with SWAPDB (one MULTI), the swapped-out DBs checked for late writes
// and flushed; or, after a failure, the staging DBs discarded. Planning and
// claiming the staging DBs: staging.cc.
#include <set>
#include <string_view>

#include "client/restore/staging.h"
#include "client/restore/staging_replies.h"
#include "common/base/log.h"

namespace rrs {

using staging_replies::is_error;
using staging_replies::join;
using staging_replies::replies;
using staging_replies::text;

Status Staging::check_staged(RedisClient& c, const LoadStats& loaded, const std::string& step) {
  // The marker, and every key acknowledged, less keys with a TTL that may
  // have expired since.
  for (auto [db, staging] : map_) {
    c.append({"SELECT", std::to_string(staging)});
    c.append({"WATCH", kStagingMarker});
    c.append({"GET", kStagingMarker});
    c.append({"DBSIZE"});
  }
  auto got = replies(c, 4 * map_.size());
  if (!got.ok()) return got.status().wrap(step);
  size_t i = 0;
  for (auto [db, staging] : map_) {
    const redisReply* marker = (*got)[4 * i + 2].get();
    const redisReply* size = (*got)[4 * i + 3].get();
    ++i;
    const std::string where = "staging DB " + std::to_string(staging) + " (for DB " +
                              std::to_string(db) + ")";
    if (text(marker) != markers_[staging])
      return Status::error(step, where + " no longer holds this run's marker key " +
                                     kStagingMarker +
                                     ": something else wrote to or flushed it during the load; "
                                     "nothing was swapped");
    auto count = [](const std::map<uint32_t, uint64_t>& m, uint32_t k) {
      auto it = m.find(k);
      return it == m.end() ? uint64_t{0} : it->second;
    };
    const uint64_t hi = count(loaded.per_db, db) + 1;
    const uint64_t lo = hi - count(loaded.per_db_volatile, db);
    const uint64_t have = size->type == REDIS_REPLY_INTEGER ? static_cast<uint64_t>(size->integer)
                                                            : 0;
    if (have < lo || have > hi)
      return Status::error(step, where + " holds " + std::to_string(have) + " keys, but " +
                                     std::to_string(hi - 1) +
                                     " were loaded into it (plus the marker): something else "
                                     "wrote to or flushed it during the load; nothing was "
                                     "swapped");
  }
  if (policy_ == TargetPolicy::kRequireEmpty) {
    auto ks = c.info("keyspace");
    if (!ks.ok()) return ks.status().wrap(step);
    std::string held;
    std::set<uint32_t> staging_dbs;
    for (auto [db, staging] : map_) staging_dbs.insert(staging);
    for (const KeyspaceDb& db : parse_keyspace(*ks))
      if (db.keys > 0 && !staging_dbs.count(db.db))
        held += (held.empty() ? "" : ", ") + std::string("db") + std::to_string(db.db) + ": " +
                std::to_string(db.keys) + " keys";
    if (!held.empty()) {
      return Status::error(step, "the target got keys during the load (" + held +
                                     "), which --atomic without --flush does not replace: "
                                     "nothing was swapped")
          .as(ErrorKind::kRefused);
    }
  }

  return {};
}

// Queues MULTI and the swap's commands; what each EXEC reply answers.
std::vector<std::string> Staging::queue_swap(RedisClient& c) {
  // One transaction: nothing in between is visible to any other client.
  std::vector<std::string> queued;  // what each EXEC reply answers, for messages
  auto add = [&](std::vector<std::string> argv, std::string what) {
    std::vector<std::string_view> v(argv.begin(), argv.end());
    c.append(v);
    queued.push_back(std::move(what));
  };
  c.append({"MULTI"});
  if (!functions_payload_.empty())
    add({"FUNCTION", "RESTORE", functions_payload_, "FLUSH"}, "FUNCTION RESTORE");
  else if (flush_functions_)
    add({"FUNCTION", "FLUSH", "SYNC"}, "FUNCTION FLUSH");
  for (auto [db, staging] : map_) {
    add({"SELECT", std::to_string(staging)}, "SELECT " + std::to_string(staging));
    add({"DEL", kStagingMarker}, "DEL " + std::string(kStagingMarker));
  }
  for (auto [db, staging] : map_)
    add({"SWAPDB", std::to_string(db), std::to_string(staging)},
        "SWAPDB " + std::to_string(db) + " " + std::to_string(staging));
  // With --flush the swapped-out DBs (now at the staging indices) hold the
  // old data: flush them and every other DB but the table's. Without it they
  // were empty at the check above, so anything in them now was written in
  // the one round trip before EXEC: kept and reported below, never flushed.
  std::set<uint32_t> to_flush;
  if (policy_ == TargetPolicy::kFlush)
    for (uint32_t x = 0; x < databases_; ++x)
      if (!map_.count(x)) to_flush.insert(x);
  for (uint32_t x : to_flush) {
    add({"SELECT", std::to_string(x)}, "SELECT " + std::to_string(x));
    add({"FLUSHDB", "ASYNC"}, "FLUSHDB ASYNC (DB " + std::to_string(x) + ")");
  }
  return queued;
}

Result<Staging::Swapped> Staging::swap_in(const LoadStats& loaded) {
  const std::string step = "--atomic: swap the loaded copy in";
  auto connected = connect();
  if (!connected.ok()) return connected.status().wrap(step);
  RedisClient& c = *connected;
  RRS_RETURN_IF_ERROR(check_staged(c, loaded, step));
  const std::vector<std::string> queued = queue_swap(c);
  const bool functions_first = !functions_payload_.empty() || flush_functions_;
  c.append({"EXEC"});
  auto tx = replies(c, queued.size() + 2);
  if (!tx.ok()) return tx.status().wrap(step + " (whether EXEC ran is unknown: check the target)");
  const redisReply* exec = tx->back().get();
  if (exec->type == REDIS_REPLY_NIL)
    return Status::error(step, "a staging DB's marker changed between the check and the swap "
                               "(another client wrote to or flushed it): nothing was swapped");
  if (exec->type != REDIS_REPLY_ARRAY) {
    std::string why = text(exec);
    for (size_t k = 1; k + 1 < tx->size(); ++k)
      if (is_error((*tx)[k].get())) why += "; " + queued[k - 1] + ": " + text((*tx)[k].get());
    return Status::error(step, "the target refused the transaction, nothing was swapped: " + why);
  }
  std::string errors;
  for (size_t k = 0; k < exec->elements && k < queued.size(); ++k)
    if (is_error(exec->element[k]) && !(functions_first && k == 0))
      errors += (errors.empty() ? "" : "; ") + queued[k] + ": " + text(exec->element[k]);
  if (functions_first && is_error(exec->element[0]))
    return Swapped{
        Status::error(step, "the table's keys were swapped in, but " + queued[0] +
                                " in the same transaction failed (" + text(exec->element[0]) +
                                "; did the target's functions change during the load?): the "
                                "target holds the table's keys with its previous functions" +
                                (errors.empty() ? "" : "; also " + errors))};
  if (!errors.empty())
    return Swapped{Status::error(step, "the swap ran, but some of its commands failed: " + errors)};
  claimed_.clear();  // the markers are gone with the swap
  log::info("--atomic: swapped " + std::to_string(map_.size()) +
            " loaded DBs in with one MULTI/EXEC (SWAPDB " + describe() +
            (functions_first ? ", " + queued[0] : std::string()) + ")" +
            (policy_ == TargetPolicy::kFlush ? "; the old data went with FLUSHDB ASYNC of every "
                                               "other DB"
                                             : ""));
  if (policy_ == TargetPolicy::kRequireEmpty) report_late_writes(c);
  return Swapped{};
}

Status Staging::discard(int64_t loader_client_id) {
  if (claimed_.empty()) return {};
  const std::string left = "staging DB " + join(claimed_) +
                           " may still hold a partial copy and the marker key " +
                           std::string(kStagingMarker) +
                           ": the next rdma-client --atomic into this target flushes it, or "
                           "FLUSHDB it yourself";
  auto fail = [&](const Status& why) {
    return Status::error("--atomic: flush the staging DBs", why.message() + "; " + left);
  };
  auto c = connect();
  if (!c.ok()) return fail(c.status());
  // Commands the loader sent may still be queued on its connection: kill it,
  // so none of them lands after the flush.
  if (loader_client_id > 0)
    (void)c->command({"CLIENT", "KILL", "ID", std::to_string(loader_client_id)});
  for (uint32_t staging : claimed_) {
    c->append({"SELECT", std::to_string(staging)});
    c->append({"GET", kStagingMarker});
  }
  auto got = replies(*c, 2 * claimed_.size());
  if (!got.ok()) return fail(got.status());
  std::vector<uint32_t> flushed, not_ours;
  for (size_t i = 0; i < claimed_.size(); ++i) {
    const uint32_t staging = claimed_[i];
    if (text((*got)[2 * i + 1].get()) != markers_[staging]) {
      not_ours.push_back(staging);  // someone else's now: leave it
      continue;
    }
    auto r = c->command({"SELECT", std::to_string(staging)});
    if (r.ok()) r = c->command({"FLUSHDB", "ASYNC"});
    if (!r.ok()) return fail(r.status());
    flushed.push_back(staging);
  }
  claimed_.clear();
  if (!flushed.empty())
    log::info("--atomic: flushed staging DB " + join(flushed) + " (the partial copy)");
  if (!not_ours.empty())
    log::warn("--atomic: staging DB " + join(not_ours) +
              " no longer holds this run's marker (something else wrote to or flushed it): left "
              "as it is");
  return {};
}

}  // namespace rrs
