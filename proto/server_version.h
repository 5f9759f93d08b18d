// Which server wrote or will load an RDB: the engine (Redis or Valkey) and
// its version, and what follows from them: the newest RDB version it loads,
// and whether it has Redis Functions. Pure: the caller brings the text
// (INFO server, an RDB's redis-ver / valkey-ver aux field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rrs {

// Stored in the table header (a byte): never renumber.
enum class Engine : uint8_t { kUnknown = 0, kRedis = 1, kValkey = 2 };

const char* engine_name(Engine e);  // "Redis", "Valkey", "an unknown server"

struct ServerVersion {
  Engine engine = Engine::kUnknown;
  uint16_t major = 0, minor = 0, patch = 0;

  // "9.1.2" (a missing patch is 0); nullopt when it does not start with
  // two dot-separated numbers.
  static std::optional<ServerVersion> parse(Engine engine, std::string_view version);
  // From INFO server: Valkey reports `valkey_version` (its `redis_version` is
  // a fixed 7.2.4 for old clients), Redis only `redis_version`.
  static std::optional<ServerVersion> from_info(std::string_view info_server);

  std::string number() const;     // "9.1.2"
  std::string to_string() const;  // "Valkey 9.1.2"
  bool at_least(uint16_t maj, uint16_t min) const {
    return major > maj || (major == maj && minor >= min);
  }

  // The newest RDB version it writes and loads: Redis 7.0 10, 7.2 11,
  // 7.4-8.0 12; Valkey 7.2-8.x 11, 9.x 80.
  uint16_t newest_rdb() const;
  // Whether it loads RDB `version` (a replication stream, or a RESTORE
  // payload): not newer than newest_rdb(), and never the other engine's
  // numbering past RDB 11 (Valkey refuses 12 to 79; Redis knows no 80).
  bool loads_rdb(uint16_t version) const;
  bool has_functions() const;  // FUNCTION, RDB FUNCTION2: Redis 7.0, every Valkey
};

// The oldest releases that load RDB `version`, for messages that say what
// to upgrade to: "Redis 7.4 or later", "Valkey 9.0 or later", "Redis 7.2 or
// Valkey 7.2 or later".
std::string first_servers_for_rdb(uint16_t version);

}  // namespace rrs
