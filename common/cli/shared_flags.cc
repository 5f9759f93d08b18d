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

std::vector<Flag> redis_tls_flags(TlsOptions& out) {
  out.flag = "--redis-tls";
  return {
      {"--redis-tls", "", "", "", "TLS to every Redis and Valkey it connects to",
       "TLS to every Redis and Valkey it connects to (for\n"
       "servers with tls-port and port 0); the files below\n"
       "as redis-cli --tls takes them",
       false, set_true(out.enabled)},
      {"--redis-tls-cacert", "FILE", "the system's CAs", "",
       "`--redis-tls`: the CA certificates (PEM) to verify them with",
       "--redis-tls: the CA certificates (PEM) to verify\n"
       "their certificates with (default: the system's)",
       false, set_string(out.ca_file)},
      {"--redis-tls-cert", "FILE", "", "",
       "`--redis-tls`: our certificate (PEM), for servers with `tls-auth-clients yes`, and the "
       "one a replica-mode link shows a target with `tls-replication yes`",
       "--redis-tls: our certificate (PEM): for servers\n"
       "with tls-auth-clients yes, and the one a\n"
       "replica-mode link shows a target with\n"
       "tls-replication yes",
       false, set_string(out.cert_file)},
      {"--redis-tls-key", "FILE", "", "", "`--redis-tls`: its private key (PEM)",
       "--redis-tls: the client certificate's private key\n"
       "(PEM)",
       false, set_string(out.key_file)},
      {"--redis-tls-sni", "NAME", "the host", "",
       "`--redis-tls`: the name to ask for and to find in their certificates",
       "--redis-tls: the server name to ask for and to\n"
       "find in their certificates (default: the host\n"
       "connected to)",
       false, set_string(out.sni)},
      {"--redis-tls-insecure", "", "", "",
       "`--redis-tls`: do not verify their certificates (never in production)",
       "--redis-tls: do not verify their certificates\n"
       "(anyone on the path can then read and change the\n"
       "data; never in production)",
       false, set_true(out.insecure)},
  };
}

std::vector<Flag> transport_tls_flags(TlsOptions& out, TlsRole role) {
  out.flag = "--tls";
  const bool server = role == TlsRole::kServer;
  std::vector<Flag> flags = {
      {"--tls", "", "", "",
       server ? "serve TCP over TLS 1.3 (kernel TLS where the kernel has it); not with verbs"
              : "read over TCP with TLS 1.3, verifying the server's certificate; not with verbs",
       server ? "serve over TCP with TLS 1.3 (kernel TLS where\n"
                "the kernel has it; not with --transport verbs:\n"
                "RDMA is not encrypted)"
              : "read over TCP with TLS 1.3 (not with --transport\n"
                "verbs: RDMA is not encrypted)",
       false, set_true(out.enabled)},
      {"--tls-cert", "FILE", "", "",
       server ? "`--tls`: the server's certificate (PEM)"
              : "`--tls`: a client certificate (PEM), for a server that asks for one",
       server ? "--tls: the server's certificate (PEM)"
              : "--tls: a client certificate (PEM), for a server\n"
                "with --tls-cacert (mutual TLS)",
       false, set_string(out.cert_file)},
      {"--tls-key", "FILE", "", "", "`--tls`: its private key (PEM)",
       "--tls: the certificate's private key (PEM)", false, set_string(out.key_file)},
      {"--tls-cacert", "FILE", server ? "" : "the system's CAs", "",
       server ? "`--tls`: CA certificates (PEM); when given, clients must show a certificate "
                "one of them signed (mutual TLS)"
              : "`--tls`: the CA certificates (PEM) to verify the server with",
       server ? "--tls: CA certificates (PEM); when given, each\n"
                "client must show a certificate they signed"
              : "--tls: the CA certificates (PEM) to verify the\n"
                "server's certificate with (default: the system's)",
       false, set_string(out.ca_file)},
  };
  if (!server)
    flags.push_back({"--tls-sni", "NAME", "the host", "",
                     "`--tls`: the name to ask for and to find in the server's certificate",
                     "--tls: the server name to ask for and to find\n"
                     "in its certificate (default: the host connected\n"
                     "to)",
                     false, set_string(out.sni)});
  return flags;
}

std::string check_tls_flags(const TlsOptions& tls) {
  if (tls.enabled) return "";
  const std::pair<const std::string*, const char*> files[] = {{&tls.ca_file, "-cacert"},
                                                              {&tls.cert_file, "-cert"},
                                                              {&tls.key_file, "-key"},
                                                              {&tls.sni, "-sni"}};
  for (const auto& [value, suffix] : files)
    if (!value->empty()) return tls.flag + suffix + " needs " + tls.flag;
  if (tls.insecure) return tls.flag + "-insecure needs " + tls.flag;
  return "";
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
