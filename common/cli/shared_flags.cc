#include "common/cli/shared_flags.h"

#include <string>

#include "common/cli/cpu_list.h"
#include "common/metrics/http_endpoint.h"

namespace rrs {

FlagSetter set_cpu_flag(std::vector<int>& out) {
  return [&out](ArgReader& args, std::string_view name, const std::string& v) {
    auto cpus = parse_cpu_list(name, v);
    if (cpus.ok())
      out = std::move(*cpus);
    else
      args.fail(cpus.status().message());
  };
}

FlagSetter set_huge_pages_flag(HugePages& out) {
  return [&out](ArgReader& args, std::string_view, const std::string& v) {
    auto choice = parse_huge_pages(v);
    if (choice.ok())
      out = *choice;
    else
      args.fail(choice.status().message());
  };
}

FlagSetter set_metrics_flag(std::optional<Endpoint>& out) {
  return [&out](ArgReader& args, std::string_view, const std::string& v) {
    auto at = metrics::parse_metrics_address(v);
    if (at.ok())
      out = *at;
    else
      args.fail(at.status().message());
  };
}

FlagSetter set_log_format_flag(log::Format& out) {
  return [&out](ArgReader& args, std::string_view, const std::string& v) {
    if (auto f = log::parse_format(v))
      out = *f;
    else
      args.fail("--log-format: expected text or json, got '" + v + "'");
  };
}

}  // namespace rrs
