#include "proto/server_version.h"

#include <charconv>

#include "proto/rdb_format.h"

namespace rrs {
namespace {

// The value of `name:` in INFO text, or empty.
std::string_view info_value(std::string_view info, std::string_view name) {
  for (size_t at = 0; at < info.size();) {
    size_t end = info.find('\n', at);
    if (end == std::string_view::npos) end = info.size();
    std::string_view line = info.substr(at, end - at);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':')
      return line.substr(name.size() + 1);
    at = end + 1;
  }
  return {};
}

// A number up to the next '.', advancing `s` past it and the dot.
std::optional<uint16_t> take_number(std::string_view& s) {
  uint16_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(p - s.data()));
  if (!s.empty() && s.front() == '.') s.remove_prefix(1);
  return n;
}

}  // namespace

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::kRedis: return "Redis";
    case Engine::kValkey: return "Valkey";
    case Engine::kUnknown: break;
  }
  return "an unknown server";
}

std::optional<ServerVersion> ServerVersion::parse(Engine engine, std::string_view version) {
  ServerVersion v;
  v.engine = engine;
  auto major = take_number(version);
  auto minor = take_number(version);
  if (!major || !minor) return std::nullopt;
  v.major = *major;
  v.minor = *minor;
  v.patch = take_number(version).value_or(0);
  return v;
}

std::optional<ServerVersion> ServerVersion::from_info(std::string_view info_server) {
  if (auto valkey = info_value(info_server, "valkey_version"); !valkey.empty())
    return parse(Engine::kValkey, valkey);
  return parse(Engine::kRedis, info_value(info_server, "redis_version"));
}

std::string ServerVersion::number() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string ServerVersion::to_string() const {
  return std::string(engine_name(engine)) + " " + number();
}

uint16_t ServerVersion::newest_rdb() const {
  if (engine == Engine::kValkey) return at_least(9, 0) ? 80 : 11;
  if (at_least(7, 4)) return 12;
  if (at_least(7, 2)) return 11;
  if (at_least(7, 0)) return 10;
  if (at_least(5, 0)) return 9;
  if (at_least(4, 0)) return 8;
  if (at_least(3, 2)) return 7;
  return 6;
}

bool ServerVersion::loads_rdb(uint16_t version) const {
  return rdb::fits_in(version, newest_rdb());
}

bool ServerVersion::has_functions() const { return engine == Engine::kValkey || at_least(7, 0); }

std::string first_servers_for_rdb(uint16_t version) {
  if (rdb::is_valkey_numbering(version)) return "Valkey 9.0 or later";
  switch (version) {
    case 10: return "Redis 7.0 or Valkey 7.2 or later";
    case 11: return "Redis 7.2 or Valkey 7.2 or later";
    case 12: return "Redis 7.4 or later";
    default: break;
  }
  if (version > rdb::kMaxRedisVersion) return "a Redis newer than 8.0";
  return "Redis 2.6 or later";
}

}  // namespace rrs
