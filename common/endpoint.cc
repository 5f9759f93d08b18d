#include "common/endpoint.h"

#include <charconv>

namespace rrs {

Result<uint16_t> parse_port(std::string_view text) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0 || v > 65535)
    return Status::error("parse port", "'" + std::string(text) + "' is not a port in 1..65535");
  return static_cast<uint16_t>(v);
}

Result<Endpoint> parse_endpoint(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return Status::error("parse address", "'" + std::string(text) + "' is not HOST:PORT");
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto port = parse_port(text.substr(colon + 1));
  if (!port.ok()) return port.status().wrap("parse address '" + std::string(text) + "'");
  return Endpoint{std::string(host), *port};
}

}  // namespace rrs
