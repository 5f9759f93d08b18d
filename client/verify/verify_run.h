// rdma-client --verify: compares a target with the Redis it was synced from,
// every key (or a sample), by type, value, TTL and hash field TTLs, and
// prints the first differences and a summary line (report.h). Returns ok
// when equal, kFailed when different, kUnavailable when it could not compare.
#pragma once

#include "client/client_config.h"
#include "common/base/status.h"

namespace rrs {

Status run_verify(const ClientConfig& config);

}  // namespace rrs
