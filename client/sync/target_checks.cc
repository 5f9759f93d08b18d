#include "client/sync/target_checks.h"

#include "proto/dump_payload.h"

namespace rrs {
bool has_functions(std::string_view redis_version) {
  return dump::max_rdb_for_redis(redis_version).value_or(10) >= 10;
}

Status check_target_reads(const RedisClient& target, const std::string& target_version,
                          const TableInfo& info) {
  const std::string step = "check target Redis " + target.endpoint().to_string();
  if (!info.scripts.function_payload.empty() && !has_functions(target_version))
    return Status::error(step, "the table carries " +
                                   std::to_string(info.scripts.function_libraries) +
                                   " function libraries from Redis " + info.header.redis_version +
                                   ", but the target runs Redis " + target_version +
                                   ", which has no Redis Functions; upgrade the target to Redis "
                                   "7.0 or later")
        .as(ErrorKind::kRefused);
  const auto table_rdb = static_cast<uint16_t>(info.header.rdb_version);
  auto max_rdb = dump::max_rdb_for_redis(target_version);
  if (max_rdb && table_rdb > *max_rdb)
    return Status::error(step, "the table's DUMP payloads are RDB version " +
                                   std::to_string(table_rdb) + " (written by Redis " +
                                   info.header.redis_version + "), but the target runs Redis " +
                                   target_version + ", which reads up to RDB version " +
                                   std::to_string(*max_rdb) + "; upgrade the target to Redis " +
                                   dump::first_redis_for_rdb(table_rdb) + " or later")
        .as(ErrorKind::kRefused);
  return {};
}

Result<std::string> keys_held(RedisClient& target) {
  auto ks = target.info("keyspace");
  if (!ks.ok()) return ks.status().wrap("inspect target");
  std::string held;
  for (const KeyspaceDb& db : parse_keyspace(*ks)) {
    if (db.keys == 0) continue;
    held += (held.empty() ? "" : ", ") + std::string("db") + std::to_string(db.db) + ": " +
            std::to_string(db.keys) + " keys";
  }
  return held;
}

}  // namespace rrs
