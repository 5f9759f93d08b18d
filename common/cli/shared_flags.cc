#include "common/cli/shared_flags.h"

#include <algorithm>
#include <string>

#include "common/cli/cpu_list.h"
#include "common/metrics/http_endpoint.h"

namespace rrs {

FlagSetter set_cpu_flag(std::vector<int>& out) { return set_parsed(out, parse_cpu_list); }

FlagSetter set_huge_pages_flag(HugePages& out) {
  return set_parsed(out,
                    [](std::string_view, const std::string& v) { return parse_huge_pages(v); });
}

FlagSetter set_metrics_flag(std::optional<Endpoint>& out) {
  return set_parsed(out, [](std::string_view, const std::string& v) {
    return metrics::parse_metrics_address(v);
  });
}

FlagSetter set_log_format_flag(log::Format& out) {
  return [&out](ArgReader& args, std::string_view, const std::string& v) {
    if (auto f = log::parse_format(v))
      out = *f;
    else
      args.fail("--log-format: expected text or json, got '" + v + "'");
  };
}

FlagSetter set_choice(std::string& out, std::vector<std::string> choices) {
  return [&out, choices = std::move(choices)](ArgReader& args, std::string_view name,
                                              const std::string& v) {
    if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
      std::string expected;
      for (size_t i = 0; i < choices.size(); ++i)
        expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
      args.fail(std::string(name) + ": expected " + expected + ", got '" + v + "'");
    }
    out = v;
  };
}

FlagSetter set_seconds(uint64_t lo, uint64_t hi, std::chrono::seconds& out) {
  return set_number_u64(lo, hi, [&out](uint64_t s) { out = std::chrono::seconds(s); });
}

std::vector<Flag> version_and_help_flags(bool& version, HelpKind& help) {
  return {
      {"--version", "", "", "",
       "release, commit, wire formats, RDB versions; and whether this host has an active RDMA "
       "device",
       "the release and commit, the wire formats and RDB\n"
       "versions it speaks, whether verbs is available",
       true, set_true(version)},
      {"-h, --help", "", "", "", "the common flags, one line each",
       "the common flags, one line each", true, set_help(help, HelpKind::kShort)},
      {"--help-all", "", "", "", "every flag, and what the program prints; the man page's text",
       "every flag in full, and what the program prints\n"
       "(the man page's text)",
       true, set_help(help, HelpKind::kAll)},
      {"--help-markdown", "", "", "", "", "", false, set_help(help, HelpKind::kMarkdown)},
  };
}

}  // namespace rrs
