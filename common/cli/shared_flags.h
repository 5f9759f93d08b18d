// What both programs' flag tables share: the setters of --cpu,
// --huge-pages, --metrics and --log-format, a setter for a number of
// seconds, and the --version and help entries.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/base/log_line.h"
#include "common/cli/flag_table.h"
#include "common/net/endpoint.h"
#include "common/table/huge_pages.h"
#include "common/tls/tls_context.h"

namespace rrs {

FlagSetter set_cpu_flag(std::vector<int>& out);
FlagSetter set_huge_pages_flag(HugePages& out);
FlagSetter set_metrics_flag(std::optional<Endpoint>& out);
FlagSetter set_log_format_flag(log::Format& out);
// What `parse(name, value)` makes of the value, or its status as the error.
template <typename T, typename Parse>
FlagSetter set_parsed(T& out, Parse parse) {
  return [&out, parse](ArgReader& args, std::string_view name, const std::string& v) {
    auto parsed = parse(name, v);
    if (parsed.ok())
      out = std::move(*parsed);
    else
      args.fail(parsed.status().message());
  };
}
// One of `choices`, else "--name: expected a, b or c, got 'v'".
FlagSetter set_choice(std::string& out, std::vector<std::string> choices);
// A whole number of seconds in [lo, hi].
FlagSetter set_seconds(uint64_t lo, uint64_t hi, std::chrono::seconds& out);

// --redis-tls and its files, spelled as redis-cli's --tls options: for
// every connection the program makes to Redis or Valkey.
std::vector<Flag> redis_tls_flags(TlsOptions& out);
// --tls and its files, for the TCP transport: a server's certificate (and
// the CA of its clients', for mutual TLS), or a client's CA (and its own
// certificate).
std::vector<Flag> transport_tls_flags(TlsOptions& out, TlsRole role);
// "--redis-tls-cacert needs --redis-tls" when a file came without the flag
// that turns TLS on (TlsOptions::flag).
std::string check_tls_flags(const TlsOptions& tls);

// --version, -h/--help, --help-all and the hidden --help-markdown: the
// last entries of a table.
std::vector<Flag> version_and_help_flags(bool& version, HelpKind& help);

}  // namespace rrs
