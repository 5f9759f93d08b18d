#include "client/restore/restore_command.h"

#include <charconv>

#include "common/base/log.h"
#include "proto/resp_writer.h"

namespace rrs {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

void append_restore(std::string& out, std::string_view key, int64_t expire_at_ms,
                    std::string_view payload) {
  char ttl[24];
  auto [end, ec] = std::to_chars(ttl, ttl + sizeof ttl, expire_at_ms < 0 ? 0 : expire_at_ms);
  resp::append_command(out, {"RESTORE", key, std::string_view(ttl, static_cast<size_t>(end - ttl)),
                             payload, "REPLACE", "ABSTTL"});
}

std::optional<std::string> stopping_error(std::string_view err) {
  const std::string e(err);
  if (starts_with(err, "OOM"))
    return "target ran out of memory: " + e + " (raise maxmemory on the target)";
  if (starts_with(err, "READONLY"))
    return "target is a read-only replica: " + e + " (run REPLICAOF NO ONE on it first)";
  if (starts_with(err, "NOAUTH") || starts_with(err, "NOPERM") || starts_with(err, "LOADING"))
    return e;
  return std::nullopt;
}

std::string restore_failure(std::string_view key, uint64_t index, uint32_t db, std::string_view err,
                            uint16_t table_rdb, const ServerVersion& target) {
  std::string msg = "RESTORE failed: key '" + log::printable(key) + "' (record " +
                    std::to_string(index) + ", DB " + std::to_string(db) + "): " + std::string(err);
  if (err.find("payload version or checksum") != std::string_view::npos)
    msg += " (payload RDB version " + std::to_string(table_rdb) + ", target " + target.to_string() +
           "; if the target is older than the source, upgrade it)";
  return msg;
}

}  // namespace rrs
