// One full sync, end to end: connect to the target Redis and the sidecar,
// validate the table, then fetch (its own thread) and load (this thread) at
// the same time. Returns the process exit code; prints the summary.
#pragma once

#include "client/client_config.h"

namespace rrs {

int run_full_sync(const ClientConfig& config);

}  // namespace rrs
