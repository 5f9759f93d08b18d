#include "tests/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rrs::test {
namespace {

// A socket bound to a kernel-picked loopback port, not listening: connects
// to it are refused, and neither bind(0) nor a server's bind takes it.
int bind_loopback(uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "pick a free loopback port: %s\n", std::strerror(errno));
    std::abort();  // no loopback networking: no test here can run
  }
  port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

uint16_t free_loopback_port() {
  uint16_t port = 0;
  ::close(bind_loopback(port));
  return port;
}

uint16_t closed_loopback_port() {
  uint16_t port = 0;
  (void)bind_loopback(port);  // held until the process ends, on purpose
  return port;
}

ReservedPort::ReservedPort() : fd_(bind_loopback(port_)) {}

uint16_t ReservedPort::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return port_;
}

}  // namespace rrs::test
