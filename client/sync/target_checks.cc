#include "client/sync/target_checks.h"

namespace rrs {

Result<ServerVersion> target_server(RedisClient& target) {
  auto server = target.info("server");
  if (!server.ok()) return server.status().wrap("inspect target");
  auto version = ServerVersion::from_info(*server);
  if (!version)
    return Status::error("inspect target " + target.endpoint().to_string(),
                         "INFO server names no redis_version or valkey_version: is it Redis?")
        .as(ErrorKind::kRefused);
  return *version;
}

Status check_target_reads(const RedisClient& target, const ServerVersion& server,
                          const TableInfo& info) {
  const std::string step = "check target " + target.endpoint().to_string();
  const table::Header& h = info.header;
  const std::string source = std::string(engine_name(h.engine)) + " " + h.server_version;
  if (!info.scripts.function_payload.empty() && !server.has_functions())
    return Status::error(step, "the table carries " +
                                   std::to_string(info.scripts.function_libraries) +
                                   " function libraries from " + source + ", but the target runs " +
                                   server.to_string() +
                                   ", which has no Redis Functions; upgrade the target to Redis "
                                   "7.0 or later")
        .as(ErrorKind::kRefused);
  const auto table_rdb = static_cast<uint16_t>(h.rdb_version);
  if (table_rdb == 0 || server.loads_rdb(table_rdb)) return {};
  const std::string which = "the table's DUMP payloads are RDB version " +
                            std::to_string(table_rdb) + " (written by " + source +
                            "), but the target runs " + server.to_string();
  if (table_rdb <= server.newest_rdb())  // the other engine's format after the split
    return Status::error(step, which + ", which does not load RDB " + std::to_string(table_rdb) +
                                   ": past RDB 11 Redis and Valkey each have formats of their "
                                   "own; load it into " +
                                   first_servers_for_rdb(table_rdb))
        .as(ErrorKind::kRefused);
  return Status::error(step, which + ", which loads RDB up to version " +
                                 std::to_string(server.newest_rdb()) + "; upgrade the target to " +
                                 first_servers_for_rdb(table_rdb))
      .as(ErrorKind::kRefused);
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
