#include "client/restore/staging.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>
#include <set>
#include <string_view>

#include "client/restore/staging_replies.h"
#include "client/sync/target_checks.h"
#include "common/base/clock.h"
#include "common/base/log.h"

namespace rrs {

using staging_replies::is_error;
using staging_replies::join;
using staging_replies::replies;
using staging_replies::text;

namespace {

std::string random_token() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The target's `databases` setting, which bounds the DBs to stage in.
Result<uint32_t> read_databases(RedisClient& c, const std::string& step) {
  auto databases = c.command({"CONFIG", "GET", "databases"});
  // A well-formed answer is ["databases", "<count>"], the count at least 1.
  std::string_view count;
  if (databases.ok() && (*databases)->type == REDIS_REPLY_ARRAY && (*databases)->elements == 2 &&
      (*databases)->element[1]->type == REDIS_REPLY_STRING)
    count = std::string_view((*databases)->element[1]->str, (*databases)->element[1]->len);
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
  if (count.empty() || ec != std::errc() || end != count.data() + count.size() || n == 0) {
    return Status::error(step, "cannot read the target's `databases` (CONFIG GET databases: " +
                                   (databases.ok() ? std::string("unexpected reply")
                                                   : databases.status().reason()) +
                                   "), which --atomic needs to pick empty DBs to stage in: allow "
                                   "this user CONFIG GET, or run without --atomic")
        .as(ErrorKind::kRefused);
  }
  return n;
}

// Staging DBs an earlier run left behind (killed mid-load, or its target
// went away before it could flush them) are recognized by their marker and
// flushed. Returns the other DBs in `held`: those holding keys not ours.
Result<std::set<uint32_t>> flush_abandoned(RedisClient& c, const std::vector<KeyspaceDb>& held,
                                           const std::string& step) {
  for (const KeyspaceDb& db : held) {
    c.append({"SELECT", std::to_string(db.db)});
    c.append({"GET", kStagingMarker});
  }
  auto got = replies(c, 2 * held.size());
  if (!got.ok()) return got.status().wrap(step);
  std::set<uint32_t> busy;
  for (size_t i = 0; i < held.size(); ++i) {
    const redisReply* marker = (*got)[2 * i + 1].get();
    if (marker->type != REDIS_REPLY_STRING) {
      busy.insert(held[i].db);
      continue;
    }
    log::warn("DB " + std::to_string(held[i].db) + " holds " + std::to_string(held[i].keys) +
              " keys staged by an earlier --atomic run that did not finish (" +
              log::printable(text(marker)) + "): flushing it");
    auto flushed = c.command({"SELECT", std::to_string(held[i].db)});
    if (flushed.ok()) flushed = c.command({"FLUSHDB", "ASYNC"});
    if (!flushed.ok()) return flushed.status().wrap(step);
  }
  return busy;
}

// Table DB -> staging DB: for each DB the table has keys in, one of the
// highest-numbered DBs that is neither `busy` nor used by the table.
Result<std::map<uint32_t, uint32_t>> choose_staging_dbs(const TableInfo& info,
                                                        const std::vector<KeyspaceDb>& held,
                                                        std::set<uint32_t> busy, uint32_t databases,
                                                        const std::string& step) {
  std::vector<uint32_t> table;
  for (const table::DbEntry& e : info.dbs)
    if (e.key_count > 0) table.push_back(e.db);
  std::sort(table.begin(), table.end());
  if (!table.empty() && table.back() >= databases) {
    return Status::error(step, "the table has keys in DB " + std::to_string(table.back()) +
                                   " but the target has only " + std::to_string(databases) +
                                   " databases: raise its `databases` setting (a restart)")
        .as(ErrorKind::kRefused);
  }
  busy.insert(table.begin(), table.end());
  std::vector<uint32_t> free_dbs;
  for (uint32_t x = databases; x-- > 0 && free_dbs.size() < table.size();)
    if (!busy.count(x)) free_dbs.push_back(x);
  if (free_dbs.size() < table.size()) {
    const uint32_t missing = static_cast<uint32_t>(table.size() - free_dbs.size());
    std::string in_use;
    for (const KeyspaceDb& db : held)
      if (busy.count(db.db) && !std::binary_search(table.begin(), table.end(), db.db))
        in_use += (in_use.empty() ? "" : ", ") + std::string("db") + std::to_string(db.db);
    return Status::error(
               step,
               "--atomic loads each of the table's " + std::to_string(table.size()) + " DBs (" +
                   join(table) +
                   ") into an empty DB that the table does not use, then swaps them in; of the "
                   "target's " +
                   std::to_string(databases) + " databases only " +
                   std::to_string(free_dbs.size()) + " qualify" +
                   (in_use.empty() ? "" : " (" + in_use + " hold keys)") +
                   ": raise its `databases` setting to at least " +
                   std::to_string(databases + missing) +
                   " (a restart), empty some DBs, or run without --atomic")
        .as(ErrorKind::kRefused);
  }
  std::map<uint32_t, uint32_t> map;
  for (size_t i = 0; i < table.size(); ++i) map[table[i]] = free_dbs[i];
  return map;
}

}  // namespace

Result<RedisClient> Staging::connect() const {
  auto c = RedisClient::connect(target_, creds_, io_timeout_);
  if (!c.ok()) return c.status().as(ErrorKind::kUnavailable);
  return c;
}

std::string Staging::describe() const {
  std::string out;
  for (auto [db, staging] : map_)
    out += (out.empty() ? "" : ",") + std::to_string(db) + ":" + std::to_string(staging);
  return out.empty() ? "-" : out;
}

Result<Staging> Staging::plan(const Endpoint& target, const RedisCredentials& creds,
                              std::chrono::milliseconds io_timeout, const TableInfo& info,
                              TargetPolicy policy) {
  Staging st(target, creds, io_timeout);
  st.policy_ = policy;
  const std::string step = "--atomic: pick staging DBs on " + target.to_string();
  // The sync waits for a table still being written (needs_whole_table).
  if (!info.complete())
    return Status::error(step, "the table is still being written: its DB list is not known yet");
  auto c = st.connect();
  if (!c.ok()) return c.status().wrap(step);

  auto cluster = c->info("cluster");
  if (cluster.ok() && info_field(*cluster, "cluster_enabled") == "1") {
    return Status::error(step, "the target runs in cluster mode, which has only DB 0: there is "
                               "no DB to stage the table in; run without --atomic")
        .as(ErrorKind::kRefused);
  }
  RRS_ASSIGN_OR_RETURN(st.databases_, read_databases(*c, step));

  auto ks = c->info("keyspace");
  if (!ks.ok()) return ks.status().wrap(step);
  const std::vector<KeyspaceDb> held = parse_keyspace(*ks);
  RRS_ASSIGN_OR_RETURN(std::set<uint32_t> busy, flush_abandoned(*c, held, step));
  RRS_ASSIGN_OR_RETURN(st.map_,
                       choose_staging_dbs(info, held, std::move(busy), st.databases_, step));
  return st;
}

Status Staging::prepare(const TableInfo& info, const ServerVersion& target) {
  auto c = connect();
  if (!c.ok()) return c.status().wrap("--atomic: prepare the target");
  const table::Scripts& s = info.scripts;
  if (s.function_payload.empty()) {
    // Like --flush without --atomic: a table without functions leaves none.
    flush_functions_ = policy_ == TargetPolicy::kFlush && target.has_functions();
  } else {
    RRS_RETURN_IF_ERROR(rehearse_functions(*c, info));
  }
  RRS_RETURN_IF_ERROR(claim(*c));
  if (!claimed_.empty())
    log::info("--atomic: loading the table's DBs into staging DBs " + join(claimed_) + " (" +
              describe() + "), swapped in with SWAPDB once all of it is loaded");
  return {};
}

Status Staging::rehearse_functions(RedisClient& c, const TableInfo& info) {
  const table::Scripts& s = info.scripts;
  const std::string where = "--atomic: check the table's functions against " + target_.to_string();
  auto backup = c.command({"FUNCTION", "DUMP"});
  if (!backup.ok()) return backup.status().wrap(where);
  const bool had_functions = (*backup)->type == REDIS_REPLY_STRING;
  const std::string own = text(backup->get());
  const char* mode = policy_ == TargetPolicy::kFlush ? "FLUSH" : "APPEND";
  // Restore the table's, read back the result, put the target's own back:
  // one transaction, so nobody sees the table's functions before the swap.
  c.append({"MULTI"});
  c.append({"FUNCTION", "RESTORE", s.function_payload, mode});
  c.append({"FUNCTION", "DUMP"});
  if (had_functions)
    c.append({"FUNCTION", "RESTORE", own, "FLUSH"});
  else
    c.append({"FUNCTION", "FLUSH", "SYNC"});
  c.append({"EXEC"});
  auto got = replies(c, 5);
  if (!got.ok()) return got.status().wrap(where);
  const redisReply* exec = (*got)[4].get();
  if (exec->type != REDIS_REPLY_ARRAY || exec->elements != 3)
    return Status::error(where, "the transaction was refused: " + text(exec));
  const redisReply* restored = exec->element[0];
  const redisReply* result = exec->element[1];
  const redisReply* put_back = exec->element[2];
  if (is_error(put_back))
    return Status::error(where, "could not put the target's own functions back after trying "
                                "the table's (" +
                                    text(put_back) +
                                    "): compare its FUNCTION LIST with what it held");
  if (is_error(restored)) {
    const std::string err = text(restored);
    if (err.find("already exists") != std::string::npos) {
      return Status::error(where, "the target's functions conflict with the table's: " + err +
                                      "; use --flush to replace the target's functions with the "
                                      "table's (nothing was loaded)")
          .as(ErrorKind::kRefused);
    }
    return Status::error(where, "FUNCTION RESTORE " + std::string(mode) + " of " +
                                    std::to_string(s.function_libraries) +
                                    " libraries failed: " + err + " (nothing was loaded)");
  }
  if (result->type != REDIS_REPLY_STRING)
    return Status::error(where, "FUNCTION DUMP gave no payload: " + text(result));
  functions_payload_ = text(result);
  function_libraries_ = s.function_libraries;
  return {};
}

Status Staging::claim(RedisClient& c) {
  const std::string step = "--atomic: claim the staging DBs";
  const std::string run = "pid " + std::to_string(::getpid()) + ", started at unix ms " +
                          std::to_string(unix_ms()) + ", token " + random_token();
  for (auto [db, staging] : map_) {
    markers_[staging] = "rdma-client --atomic staging DB for table DB " + std::to_string(db) +
                        " (" + run + ")";
    c.append({"SELECT", std::to_string(staging)});
    c.append({"SET", kStagingMarker, markers_[staging], "NX"});
    c.append({"DBSIZE"});
  }
  auto got = replies(c, 3 * map_.size());
  if (!got.ok()) return got.status().wrap(step);
  std::vector<uint32_t> taken;  // got keys since plan() found them empty
  std::string errors;
  size_t i = 0;
  for (auto [db, staging] : map_) {
    const redisReply* select = (*got)[3 * i].get();
    const redisReply* set = (*got)[3 * i + 1].get();
    const redisReply* size = (*got)[3 * i + 2].get();
    ++i;
    const bool ours = !is_error(select) && set->type == REDIS_REPLY_STATUS;
    if (ours) claimed_.push_back(staging);  // discard() flushes it after a failure
    if (is_error(select) || is_error(set)) {
      errors += (errors.empty() ? "" : "; ") + std::string("DB ") + std::to_string(staging) + ": " +
                text(is_error(select) ? select : set);
    } else if (!ours || size->type != REDIS_REPLY_INTEGER || size->integer != 1) {
      taken.push_back(staging);
      if (ours) {  // our marker went into a DB something else writes to: take it out
        claimed_.pop_back();
        auto del = c.command({"SELECT", std::to_string(staging)});
        if (del.ok()) del = c.command({"DEL", kStagingMarker});
      }
    }
  }
  if (!errors.empty()) return Status::error(step, errors);
  if (!taken.empty())
    return Status::error(step, "DB " + join(taken) +
                                   " got keys since it was picked as an empty staging DB: "
                                   "something else uses it; empty it or run without --atomic");
  return {};
}

// Without --flush, a key written to a table DB after swap_in's last check
// was swapped out with that (empty) DB into its staging index. Say where it
// is: losing it silently would be worse than leaving it there.
void Staging::report_late_writes(RedisClient& c) {
  for (auto [db, staging] : map_) {
    c.append({"SELECT", std::to_string(staging)});
    c.append({"DBSIZE"});
  }
  auto got = replies(c, 2 * map_.size());
  if (!got.ok()) {
    log::warn("--atomic: could not check the swapped-out DBs for keys written during the swap (" +
              got.status().message() + "): the staging DBs (table DB:staging DB " + describe() +
              ") should be empty");
    return;
  }
  size_t i = 0;
  for (auto [db, staging] : map_) {
    const redisReply* size = (*got)[2 * i++ + 1].get();
    if (size->type == REDIS_REPLY_INTEGER && size->integer > 0)
      log::warn("--atomic: " + std::to_string(size->integer) + " keys were written to DB " +
                std::to_string(db) + " during the swap; they are now in DB " +
                std::to_string(staging) +
                ", where the table's copy was staged: move or delete "
                "them (nothing was flushed)");
  }
}

// Each staging DB still ours (WATCHed from here to EXEC) and holding what
// was loaded into it; without --flush, no keys written elsewhere meanwhile.

}  // namespace rrs
