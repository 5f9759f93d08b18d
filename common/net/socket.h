// Small POSIX socket helpers for the TCP transport: an owning fd, connect
// with a deadline, and full reads/writes with timeouts.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/net/endpoint.h"

namespace rrs {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// Turns on the kernel's keepalive with short timers (first probe after 10 s
// idle, then every 2 s, gone after 5 unanswered: about 20 s), so a peer whose
// host died is noticed by a side that is only waiting.
void enable_tcp_keepalive(int fd);

// Small request/answer frames go out at once: no Nagle delay waiting for the
// peer's (possibly delayed) ACK.
void disable_nagle(int fd);

// The numeric addresses of a connected socket's two ends ("127.0.0.1",
// "::1"; IPv4-mapped IPv6 addresses as plain IPv4), empty on failure.
std::string local_host(int fd);
std::string peer_host(int fd);

// One attempt to open a TCP connection to `at`, giving up after `timeout`.
Result<UniqueFd> tcp_connect(const Endpoint& at, std::chrono::milliseconds timeout);

// Writes all of `data`, waiting at most `timeout` for the socket to drain.
Status send_all(int fd, std::string_view data, std::chrono::milliseconds timeout);
// Reads exactly dst.size() bytes, waiting at most `timeout` between progress.
Status recv_all(int fd, std::span<std::byte> dst, std::chrono::milliseconds timeout);
// The same, but done by `deadline` however the peer spaces its bytes: for a
// handshake, where a peer sending a byte now and then must not hold us.
Status send_all_by(int fd, std::string_view data, Clock::time_point deadline);
Status recv_all_by(int fd, std::span<std::byte> dst, Clock::time_point deadline);

}  // namespace rrs
