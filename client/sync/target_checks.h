// Checks on the target Redis that both ingest modes make before loading:
// can it read the table's payloads and functions, and does it hold data the
// load would replace. Each failure names the fix.
#pragma once

#include <string>

#include "client/fetch/table_fetcher.h"
#include "common/redis/redis_client.h"

namespace rrs {

// Redis Functions came with 7.0 (RDB 10). A version string that does not
// parse gets the benefit of the doubt: loading itself will say.
bool has_functions(std::string_view redis_version);

// Refuses a target whose Redis (`target_version`, from INFO server) cannot
// read the table's RDB version or has no Redis Functions while the table
// carries libraries (kRefused).
Status check_target_reads(const RedisClient& target, const std::string& target_version,
                          const TableInfo& info);

// "db0: 3 keys, db5: 1 keys" for a target holding keys, empty if it holds none.
Result<std::string> keys_held(RedisClient& target);

}  // namespace rrs
