// Checks on the target Redis that both ingest modes make before loading:
// can it read the table's payloads and functions, and does it hold data the
// load would replace. Each failure names the fix.
#pragma once

#include <string>

#include "client/fetch/table_fetcher.h"
#include "common/redis/redis_client.h"
#include "proto/server_version.h"

namespace rrs {

// The target's engine and version, from INFO server (kRefused when it names
// neither, so nothing is loaded into what may not be Redis).
Result<ServerVersion> target_server(RedisClient& target);

// Refuses a target (`server`, from target_server) that cannot load the
// table's RDB version or has no Redis Functions while the table carries
// libraries (kRefused).
Status check_target_reads(const RedisClient& target, const ServerVersion& server,
                          const TableInfo& info);

// "db0: 3 keys, db5: 1 keys" for a target holding keys, empty if it holds none.
Result<std::string> keys_held(RedisClient& target);

}  // namespace rrs
