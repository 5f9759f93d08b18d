// --metrics [ADDR:]PORT, which both programs take the same way.
#pragma once

#include <optional>

#include "common/cli/args.h"
#include "common/net/endpoint.h"

namespace rrs {

// If the current argument is --metrics: its address into `out` (a bad one
// fails `args`), and true.
bool metrics_option(ArgReader& args, std::optional<Endpoint>& out);

}  // namespace rrs
