#include "server/scan_source.h"

#include <charconv>
#include <unordered_set>

#include "common/clock.h"
#include "common/log.h"

namespace rrs {
namespace {

std::string_view text(const redisReply* r) { return {r->str, r->len}; }

// Redis major version from "7.0.15".
int major_version(const std::string& v) {
  int m = 0;
  std::from_chars(v.data(), v.data() + v.size(), m);
  return m;
}

}  // namespace

Result<SnapshotStats> ScanSource::snapshot(TableBuilder& into) {
  auto redis = RedisClient::connect(master_, creds_, opts_.timeout);
  if (!redis.ok()) return redis.status().as(ErrorKind::kUnavailable);
  auto server = redis->info("server");
  if (!server.ok()) return server.status().wrap("read master's INFO");
  auto keyspace = redis->info("keyspace");
  if (!keyspace.ok()) return keyspace.status().wrap("read master's INFO");
  std::string version = info_field(*server, "redis_version");
  into.set_source({version, table::SourceKind::kScan, 0, {}});
  bool absolute_expiry = major_version(version) >= 7;
  if (!absolute_expiry)
    log::warn("master runs Redis " + version +
              " (no PEXPIRETIME): expiries come from PTTL and this host's clock");

  SnapshotStats stats;
  for (const KeyspaceDb& db : parse_keyspace(*keyspace)) {
    if (db.keys == 0) continue;
    Status s = scan_db(*redis, db.db, db.keys, absolute_expiry, into, stats);
    if (!s.ok()) return s.wrap("snapshot DB " + std::to_string(db.db) + " of " + master_.to_string());
  }
  return stats;
}

Status ScanSource::scan_db(RedisClient& redis, uint32_t db, uint64_t expected,
                           bool absolute_expiry, TableBuilder& into, SnapshotStats& stats) {
  std::string db_text = std::to_string(db);
  RRS_RETURN_IF_ERROR(redis.command({"SELECT", db_text}).status());
  const std::string count = std::to_string(opts_.count);
  const std::string_view expiry_cmd = absolute_expiry ? "PEXPIRETIME" : "PTTL";

  // SCAN may return a key more than once; each goes into the table once.
  std::unordered_set<std::string> seen;
  seen.reserve(expected);
  std::vector<std::string> keys;
  std::string cursor = "0";
  auto last_report = Clock::now();

  // One round trip per batch: the DUMPs of this batch and the next SCAN travel together.
  redis.append({"SCAN", cursor, "COUNT", count});
  bool more = true;
  while (more) {
    auto scan = redis.get_reply();
    if (!scan.ok()) return scan.status();
    const redisReply* r = scan->get();
    if (r->type == REDIS_REPLY_ERROR) return Status::error("SCAN", std::string(text(r)));
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
      return Status::error("SCAN", "unexpected reply shape");
    cursor = std::string(text(r->element[0]));
    keys.clear();
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      std::string k(text(r->element[1]->element[i]));
      if (seen.insert(k).second) keys.push_back(std::move(k));
    }
    for (const std::string& k : keys) {
      redis.append({"DUMP", k});
      redis.append({expiry_cmd, k});
    }
    more = cursor != "0";
    if (more) redis.append({"SCAN", cursor, "COUNT", count});

    for (const std::string& k : keys) {
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
      if (d->type != REDIS_REPLY_STRING || t->type != REDIS_REPLY_INTEGER) {
        stats.failed++;
        log::warn("DUMP of key '" + k + "' in DB " + db_text + " failed: " +
                  std::string(d->type == REDIS_REPLY_ERROR ? text(d) : "unexpected reply") +
                  "; the key is left out of the table");
        continue;
      }
      int64_t expire_at = table::kNoExpiry;
      if (t->integer >= 0) expire_at = absolute_expiry ? t->integer : unix_ms() + t->integer;
      into.add(db, k, text(d), expire_at);
      stats.keys++;
    }
    if (seconds_since(last_report) >= 1.0) {
      last_report = Clock::now();
      log::info("snapshot: DB " + db_text + ": " + std::to_string(seen.size()) + " of ~" +
                std::to_string(expected) + " keys, " +
                std::to_string(into.staged_bytes() >> 20) + " MiB staged");
    }
  }
  return {};
}

}  // namespace rrs
