#include "common/net/endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

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

bool is_loopback_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  bool all = res != nullptr;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      all &= (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      all &= IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    } else {
      all = false;
    }
  }
  freeaddrinfo(res);
  return all;
}

}  // namespace rrs
