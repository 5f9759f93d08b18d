#include "client/restore/restore_command.h"

#include <charconv>

#include "common/base/log.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_value.h"
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

std::optional<std::string_view> plain_string(std::string_view payload, std::string& scratch) {
  // A payload RESTORE would refuse (its CRC-64 is wrong) stays a RESTORE, so
  // the target names it: the value is not trusted as a string either.
  if (payload.size() <= 1 + dump::kTrailerSize ||
      static_cast<uint8_t>(payload[0]) != rdb::kString || !dump::crc_ok(payload))
    return std::nullopt;
  const std::string_view value = payload.substr(1, payload.size() - 1 - dump::kTrailerSize);
  return rdb::string_value(value, scratch, kPlainStringMax);
}

void append_set(std::string& out, std::string_view key, int64_t expire_at_ms,
                std::string_view value) {
  if (expire_at_ms < 0) {
    resp::append_command(out, {"SET", key, value});
    return;
  }
  char at[24];
  auto [end, ec] = std::to_chars(at, at + sizeof at, expire_at_ms);
  resp::append_command(out, {"SET", key, value, "PXAT",
                             std::string_view(at, static_cast<size_t>(end - at))});
}

// MSET with an odd argument count and SET with a PXAT that is no number
// pass the arity and ACL checks, then fail their own parsing.
constexpr std::string_view kProbeKey = "rdma-client:probe";
const std::vector<std::string_view> kMsetProbe = {"MSET", kProbeKey, "x", kProbeKey};
const std::vector<std::string_view> kSetProbe = {"SET", kProbeKey, "x", "PXAT", "x"};

size_t append_plain_string_probes(std::string& out) {
  resp::append_command(out, std::span<const std::string_view>(kMsetProbe));
  resp::append_command(out, std::span<const std::string_view>(kSetProbe));
  return 2;
}

bool probe_refused(std::string_view error) { return starts_with(error, "NOPERM"); }

Result<bool> may_write_plain_strings(RedisClient& redis) {
  for (const std::vector<std::string_view>& probe : {kMsetProbe, kSetProbe}) {
    auto r = redis.command(probe);  // an error reply comes back as a Status
    if (r.ok()) continue;
    if (r.status().message().find("NOPERM") != std::string::npos) return false;
    if (r.status().kind() == ErrorKind::kUnavailable) return r.status();
  }
  return true;
}

const char* append_write(std::string& out, std::string_view key, int64_t expire_at_ms,
                         std::string_view payload, std::optional<std::string_view> value) {
  if (value) {
    append_set(out, key, expire_at_ms, *value);
    return "SET";
  }
  append_restore(out, key, expire_at_ms, payload);
  return "RESTORE";
}

const char* append_record(std::string& out, std::string_view key, int64_t expire_at_ms,
                          std::string_view payload, std::string& scratch, bool plain_strings) {
  return append_write(out, key, expire_at_ms, payload,
                      plain_strings ? plain_string(payload, scratch) : std::nullopt);
}

void MsetBuilder::add(std::string_view key, std::string_view value) {
  resp::append_bulk(args_, key);
  resp::append_bulk(args_, value);
  keys_++;
}

void MsetBuilder::flush_into(std::string& out) {
  if (keys_ == 0) return;
  resp::append_array_header(out, 1 + 2 * keys_);
  resp::append_bulk(out, "MSET");
  out.append(args_);
  args_.clear();
  keys_ = 0;
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

std::string write_failure(std::string_view command, uint32_t keys, std::string_view key,
                          uint64_t index, uint32_t db, std::string_view err, uint16_t table_rdb,
                          const ServerVersion& target) {
  std::string msg(command);
  msg += keys > 1 ? " of " + std::to_string(keys) + " keys failed: from key '" : " failed: key '";
  msg += log::printable(key) + "' (record " + std::to_string(index) + ", DB " + std::to_string(db) +
         "): " + std::string(err);
  if (err.find("payload version or checksum") != std::string_view::npos)
    msg += " (payload RDB version " + std::to_string(table_rdb) + ", target " + target.to_string() +
           "; if the target is older than the source, upgrade it)";
  return msg;
}

}  // namespace rrs
