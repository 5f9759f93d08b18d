#include "common/cli/cpu_list.h"

#include <sched.h>

#include <cerrno>
#include <charconv>
#include <set>
#include <string>

#include "common/base/log.h"

namespace rrs {
namespace {

Result<int> parse_cpu(std::string_view flag, std::string_view text) {
  int cpu = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), cpu);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || cpu < 0 ||
      cpu >= CPU_SETSIZE)
    return Status::error(std::string(flag), "expected CPU numbers 0-" +
                                                std::to_string(CPU_SETSIZE - 1) + ", got '" +
                                                std::string(text) + "'")
        .as(ErrorKind::kUsage);
  return cpu;
}

}  // namespace

Result<std::vector<int>> parse_cpu_list(std::string_view flag, std::string_view text) {
  std::set<int> cpus;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    RRS_ASSIGN_OR_RETURN(int first, parse_cpu(flag, item.substr(0, dash)));
    int last = first;
    if (dash != std::string_view::npos) {
      RRS_ASSIGN_OR_RETURN(last, parse_cpu(flag, item.substr(dash + 1)));
      if (last < first)
        return Status::error(std::string(flag),
                             "the range '" + std::string(item) + "' runs backwards")
            .as(ErrorKind::kUsage);
    }
    for (int c = first; c <= last; ++c) cpus.insert(c);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return std::vector<int>(cpus.begin(), cpus.end());
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

Status pin_to_cpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return {};
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return Status::from_errno("--cpu: read the CPUs this process may use");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (CPU_ISSET(c, &allowed)) CPU_SET(c, &set);
  if (CPU_COUNT(&set) == 0) {
    std::vector<int> may;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) may.push_back(c);
    return Status::error("--cpu " + cpu_list_text(cpus),
                         "none of these CPUs is allowed here; this process may use " +
                             cpu_list_text(may))
        .as(ErrorKind::kUsage);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return Status::from_errno("--cpu " + cpu_list_text(cpus)).as(ErrorKind::kUsage);
  log::info("running on CPUs " + cpu_list_text(cpus));
  return {};
}

}  // namespace rrs
