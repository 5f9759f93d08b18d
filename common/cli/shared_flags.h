// Setters for the flags both programs take the same way: --cpu,
// --huge-pages, --metrics and --log-format.
#pragma once

#include <optional>
#include <vector>

#include "common/base/log_line.h"
#include "common/cli/flag_table.h"
#include "common/net/endpoint.h"
#include "common/table/huge_pages.h"

namespace rrs {

FlagSetter set_cpu_flag(std::vector<int>& out);
FlagSetter set_huge_pages_flag(HugePages& out);
FlagSetter set_metrics_flag(std::optional<Endpoint>& out);
FlagSetter set_log_format_flag(log::Format& out);

}  // namespace rrs
