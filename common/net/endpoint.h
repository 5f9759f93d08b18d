// HOST:PORT parsing for flags such as --redis and --listen.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs {

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const { return host + ":" + std::to_string(port); }
};

// Accepts "host:port", "[v6addr]:port"; a port of 1..65535.
Result<Endpoint> parse_endpoint(std::string_view text);
Result<uint16_t> parse_port(std::string_view text);

// True when every address `host` resolves to is a loopback one (127/8, ::1),
// so only processes on this machine can reach a socket bound there.
bool is_loopback_host(const std::string& host);

}  // namespace rrs
