#include "server/scan_source.h"

#include <charconv>
#include <deque>
#include <unordered_set>

#include "common/base/clock.h"
#include "common/base/log.h"
#include "server/cluster_shard.h"

namespace rrs {
namespace {

std::string_view text(const redisReply* r) { return {r->str, r->len}; }

// Keys whose DUMP failed are named in the log up to this many per snapshot;
// the rest are counted (a master without DUMP fails every key).
constexpr uint64_t kLostKeysNamed = 10;

// The master's Redis Functions (7.0+): FUNCTION LIST to count the libraries
// and FUNCTION DUMP for the payload, in one MULTI so that the count matches
// the payload even if a client loads a library in between. Returns how many
// libraries went into the table.
Result<uint32_t> snapshot_functions(RedisClient& redis, TableBuilder& into) {
  redis.append({"MULTI"});
  redis.append({"FUNCTION", "LIST"});
  redis.append({"FUNCTION", "DUMP"});
  redis.append({"EXEC"});
  ReplyPtr exec;
  std::string refused;
  for (int i = 0; i < 4; ++i) {
    auto r = redis.get_reply();
    if (!r.ok()) return r.status().wrap("read the master's functions");
    if ((*r)->type == REDIS_REPLY_ERROR && refused.empty()) refused = std::string(text(r->get()));
    if (i == 3) exec = std::move(*r);
  }
  if (!refused.empty())
    return Status::error("read the master's functions (FUNCTION LIST, FUNCTION DUMP)",
                         refused + " (the sidecar's Redis user needs +multi +exec "
                                   "+function|list +function|dump)");
  const redisReply* e = exec.get();
  if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
      e->element[0]->type != REDIS_REPLY_ARRAY || e->element[1]->type != REDIS_REPLY_STRING)
    return Status::error("read the master's functions", "unexpected reply shape");
  const auto libraries = static_cast<uint32_t>(e->element[0]->elements);
  if (libraries == 0) return 0u;
  into.set_function_payload(std::string(text(e->element[1])), libraries);
  log::info("snapshot: " + std::to_string(libraries) + " function libraries (" +
            std::to_string(e->element[1]->len) + " bytes)");
  return libraries;
}

}  // namespace

Result<SnapshotStats> ScanSource::snapshot(TableBuilder& into) {
  auto redis = RedisClient::connect(master_, creds_, opts_.timeout);
  if (!redis.ok()) return redis.status().as(ErrorKind::kUnavailable);
  auto server = redis->info("server");
  if (!server.ok()) return server.status().wrap("read master's INFO");
  auto keyspace = redis->info("keyspace");
  if (!keyspace.ok()) return keyspace.status().wrap("read master's INFO");
  auto engine = ServerVersion::from_info(*server);
  if (!engine)
    return Status::error("read master's INFO server", "no redis_version or valkey_version in it")
        .as(ErrorKind::kBadData);
  into.set_source({*engine, table::SourceKind::kScan, 0, {}});
  // PEXPIRETIME and Redis Functions came with Redis 7.0; every Valkey has both.
  const bool redis7 = engine->engine == Engine::kValkey || engine->at_least(7, 0);
  bool absolute_expiry = redis7;
  if (!absolute_expiry)
    log::warn("master runs " + engine->to_string() +
              " (no PEXPIRETIME): expiries come from PTTL and this host's clock");
  // Redis Functions exist from 7.0 on. Before that a master's Lua scripts
  // live only in its script cache, which no command lists (SCRIPT EXISTS
  // needs the SHA1); only the RDB a master sends its replicas carries them
  // ("lua" aux fields), so only a PSYNC source can put them in the table.
  SnapshotStats stats;
  if (redis7) {
    auto libraries = snapshot_functions(*redis, into);
    if (!libraries.ok()) return libraries.status().wrap("snapshot " + master_.to_string());
    stats.functions = *libraries;
  }

  for (const KeyspaceDb& db : parse_keyspace(*keyspace)) {
    if (db.keys == 0) continue;
    Status s = scan_db(*redis, db.db, db.keys, absolute_expiry, into, stats);
    if (!s.ok())
      return s.wrap("snapshot DB " + std::to_string(db.db) + " of " + master_.to_string());
  }
  stats.hash_slots = read_shard_slots(master_, creds_);
  into.set_hash_slots(stats.hash_slots);
  return stats;
}

Status ScanSource::scan_db(RedisClient& redis, uint32_t db, uint64_t expected, bool absolute_expiry,
                           TableBuilder& into, SnapshotStats& stats) {
  RRS_RETURN_IF_ERROR(redis.command({"SELECT", std::to_string(db)}).status());
  RRS_ASSIGN_OR_RETURN(const std::deque<std::string> keys, collect_keys(redis, expected));
  return dump_keys(redis, db, keys, absolute_expiry, into, stats);
}

// Pass 1: the key names. SCAN may return a key more than once; keep one.
Result<std::deque<std::string>> ScanSource::collect_keys(RedisClient& redis, uint64_t expected) {
  std::deque<std::string> keys;  // push_back keeps references stable for `seen`
  std::unordered_set<std::string_view> seen;
  seen.reserve(expected);
  const std::string count = std::to_string(opts_.count);
  std::string cursor = "0";
  do {
    auto scan = redis.command({"SCAN", cursor, "COUNT", count});
    if (!scan.ok()) return scan.status();
    const redisReply* r = scan->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
      return Status::error("SCAN", "unexpected reply shape");
    cursor = std::string(text(r->element[0]));
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      std::string_view k = text(r->element[1]->element[i]);
      if (seen.contains(k)) continue;
      seen.insert(keys.emplace_back(k));
    }
  } while (cursor != "0");
  return keys;
}

// Pass 2: DUMP + expiry per key, two batches queued so Redis never waits
// for us to parse the previous one.
Status ScanSource::dump_keys(RedisClient& redis, uint32_t db, const std::deque<std::string>& keys,
                             bool absolute_expiry, TableBuilder& into, SnapshotStats& stats) {
  const std::string db_text = std::to_string(db);
  const std::string_view expiry_cmd = absolute_expiry ? "PEXPIRETIME" : "PTTL";
  constexpr size_t kBatch = 512;
  size_t sent = 0;
  auto send_batch = [&] {
    size_t end = std::min(keys.size(), sent + kBatch);
    for (; sent < end; ++sent) {
      redis.append({"DUMP", keys[sent]});
      redis.append({expiry_cmd, keys[sent]});
    }
  };
  send_batch();
  send_batch();
  auto last_report = Clock::now();
  for (size_t done = 0; done < keys.size(); ++done) {
    if (done % kBatch == 0 && done > 0) send_batch();
    const std::string& k = keys[done];
    auto dump = redis.get_reply();
    if (!dump.ok()) return dump.status();
    auto ttl = redis.get_reply();
    if (!ttl.ok()) return ttl.status();
    const redisReply* d = dump->get();
    const redisReply* t = ttl->get();
    if (d->type == REDIS_REPLY_NIL || (t->type == REDIS_REPLY_INTEGER && t->integer == -2)) {
      stats.vanished++;
      continue;
    }
    // A refused right refuses every key: fail rather than publish a table
    // without them.
    for (const redisReply* r : {d, t})
      if (r->type == REDIS_REPLY_ERROR && text(r).starts_with("NOPERM"))
        return Status::error(std::string(r == d ? "DUMP" : expiry_cmd) + " of key '" +
                                 log::printable(k) + "'",
                             std::string(text(r)) + " (the sidecar's Redis user needs +dump +" +
                                 (absolute_expiry ? "pexpiretime" : "pttl") +
                                 " and read access to every key, ~*)")
            .as(ErrorKind::kUnavailable);
    if (d->type != REDIS_REPLY_STRING || t->type != REDIS_REPLY_INTEGER) {
      // Counted in the header (keys_lost): a client refuses the table unless
      // told to load it without these keys.
      into.count_lost_key();
      const bool dump_failed = d->type != REDIS_REPLY_STRING;
      const redisReply* bad = dump_failed ? d : t;
      if (++stats.failed <= kLostKeysNamed)
        log::warn(std::string(dump_failed ? "DUMP" : expiry_cmd) + " of key '" + log::printable(k) +
                  "' in DB " + db_text + " failed: " +
                  (bad->type == REDIS_REPLY_ERROR
                       ? log::printable(text(bad))
                       : "unexpected reply type " + std::to_string(bad->type)) +
                  "; the key is left out of the table" +
                  (stats.failed == kLostKeysNamed ? " (any more are only counted)" : ""));
      continue;
    }
    int64_t expire_at = table::kNoExpiry;
    if (t->integer >= 0) expire_at = absolute_expiry ? t->integer : unix_ms() + t->integer;
    into.add(db, k, text(d), expire_at);
    stats.keys++;
    if ((done & 4095) == 0 && seconds_since(last_report) >= 1.0) {
      last_report = Clock::now();
      log::info("snapshot: DB " + db_text + ": " + std::to_string(done) + " of " +
                std::to_string(keys.size()) + " keys, " +
                std::to_string(into.staged_bytes() >> 20) + " MiB staged");
    }
  }
  return {};
}

}  // namespace rrs
