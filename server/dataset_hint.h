// What the source says it holds before a snapshot (INFO keyspace, INFO
// memory): a streamed table reserves its room from this, before the RDB's
// first key says anything. Best effort: a user without +info gets zeros,
// and the RDB's RESIZEDB counts and a default room carry the build.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"

namespace rrs {

struct DatasetHint {
  uint64_t keys = 0;   // every DB's keys
  uint64_t bytes = 0;  // used_memory
};

// Parses INFO keyspace and INFO memory texts (no I/O).
DatasetHint parse_dataset_hint(std::string_view keyspace, std::string_view memory);

// Asks `source`; zeros when it cannot (said at info level).
DatasetHint read_dataset_hint(const Endpoint& source, const RedisCredentials& creds);

}  // namespace rrs
