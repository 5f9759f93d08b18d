#include "common/cli/metrics_flag.h"

#include <string>

#include "common/metrics/http_endpoint.h"

namespace rrs {

bool metrics_option(ArgReader& args, std::optional<Endpoint>& out) {
  std::string v;
  if (!args.option("--metrics", v)) return false;
  auto at = metrics::parse_metrics_address(v);
  if (at.ok())
    out = *at;
  else
    args.fail(at.status().message());
  return true;
}

}  // namespace rrs
