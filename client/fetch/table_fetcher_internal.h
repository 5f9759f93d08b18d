// What table_fetcher.cc and table_fetcher_records.cc share; not for
// anything outside TableFetcher.
#pragma once

#include "common/base/status.h"

namespace rrs {

// What a fetch returns once cancel() was called.
inline Status cancelled() { return Status::error("fetch table", "cancelled"); }

}  // namespace rrs
