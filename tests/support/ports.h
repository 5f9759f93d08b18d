// Loopback ports for test processes. The kernel picks a free one when we bind
// port 0; we release it and hand the number on. Another process can grab it in
// between, so starters retry on "address in use" (see RedisProcess).
#pragma once

#include <cstdint>

namespace rrs::test {

// A port on 127.0.0.1 that nothing listened on a moment ago.
uint16_t free_loopback_port();

// A port on 127.0.0.1 where a connect() is refused for as long as the test
// runs: it stays bound (never listening) until the process ends, so no
// parallel test's server can take it.
uint16_t closed_loopback_port();

// A port held closed (connect() refused) until release(), for a server that
// "is not up yet" and starts later on it: only the moment between release()
// and that start is open to a parallel test.
class ReservedPort {
 public:
  ReservedPort();
  ~ReservedPort() { release(); }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;

  uint16_t port() const { return port_; }
  // Frees the port, for the server about to start on it.
  uint16_t release();

 private:
  uint16_t port_ = 0;  // before fd_: the constructor sets both at once
  int fd_ = -1;
};

}  // namespace rrs::test
