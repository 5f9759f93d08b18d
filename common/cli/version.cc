#include "common/cli/version.h"

#include "proto/change_log_layout.h"
#include "proto/control.h"
#include "proto/rdb_format.h"
#include "proto/table_layout.h"

// Set by CMake (common/cli/CMakeLists.txt) when the build was configured.
#ifndef RRS_VERSION
#define RRS_VERSION "unknown"
#endif
#ifndef RRS_COMMIT
#define RRS_COMMIT "unknown"
#endif

namespace rrs {

std::string version_text(std::string_view program, std::string_view verbs) {
  std::string s = std::string(program) + " " + RRS_VERSION + " (commit " + RRS_COMMIT + ")\n";
  s += "control protocol " + std::to_string(control::kProtocolVersion) + ", mapping table layout " +
       std::to_string(table::kLayoutVersion) + ", change log layout " +
       std::to_string(change_log::kLayoutVersion) + "\n";
  s += "RDB versions read: " + std::to_string(rdb::kMinVersion) + " to " +
       std::to_string(rdb::kMaxRedisVersion) + " (Redis), " +
       std::to_string(rdb::kFirstValkeyVersion) +
       " (Valkey); values converted for targets from "
       "Redis 7.0 and Valkey 8.0\n";
  s += "verbs: " + std::string(verbs) + "\n";
  return s;
}

}  // namespace rrs
