#include "common/net/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>

namespace rrs {

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

Status wait_fd(int fd, short events, std::chrono::milliseconds timeout, const char* step) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n > 0) return {};
    if (n == 0)
      return Status::error(step, "timed out after " + std::to_string(timeout.count()) + " ms",
                           ETIMEDOUT);
    if (errno != EINTR) return Status::from_errno(step);
  }
}

}  // namespace

namespace {

std::string numeric_host(const sockaddr_storage& sa, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return "";
  std::string h = host;
  if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h = h.substr(7);
  return h;
}

}  // namespace

std::string local_host(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "";
  return numeric_host(sa, len);
}

std::string peer_host(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return "";
  return numeric_host(sa, len);
}

Result<UniqueFd> tcp_connect(const Endpoint& at, std::chrono::milliseconds timeout) {
  const std::string step = "connect to " + at.to_string();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(at.port);
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::error(step, std::string("cannot resolve host: ") + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);

  Status last = Status::error(step, "no address");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return Status::from_errno(step + ": socket");
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last = Status::from_errno(step);
        continue;
      }
      if (Status s = wait_fd(fd.get(), POLLOUT, timeout, step.c_str()); !s.ok()) {
        last = s;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last = Status::from_errno(step, err);
        continue;
      }
    }
    disable_nagle(fd.get());
    enable_tcp_keepalive(fd.get());
    return fd;
  }
  return last;
}

void disable_nagle(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void enable_tcp_keepalive(int fd) {
  int on = 1, idle = 10, interval = 2, count = 5;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

namespace {

// How long the next wait of an I/O call may take: `timeout` each time, or
// what is left until a deadline (then the call as a whole is bounded).
struct WaitBudget {
  std::chrono::milliseconds timeout{0};
  std::optional<Clock::time_point> deadline;
  std::chrono::milliseconds next() const {
    if (!deadline) return timeout;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
    return std::max(left, std::chrono::milliseconds(0));
  }
};

Status send_with(int fd, std::string_view data, const WaitBudget& budget) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RRS_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, budget.next(), "send"));
    } else if (n < 0 && errno != EINTR) {
      return Status::from_errno("send");
    }
  }
  return {};
}

Status recv_with(int fd, std::span<std::byte> dst, const WaitBudget& budget) {
  size_t got = 0;
  while (got < dst.size()) {
    ssize_t n = ::recv(fd, dst.data() + got, dst.size() - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return Status::error("receive", "peer closed the connection", ECONNRESET);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      RRS_RETURN_IF_ERROR(wait_fd(fd, POLLIN, budget.next(), "receive"));
    } else if (errno != EINTR) {
      return Status::from_errno("receive");
    }
  }
  return {};
}

}  // namespace

Status send_all(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  return send_with(fd, data, {timeout, std::nullopt});
}

Status recv_all(int fd, std::span<std::byte> dst, std::chrono::milliseconds timeout) {
  return recv_with(fd, dst, {timeout, std::nullopt});
}

Status send_all_by(int fd, std::string_view data, Clock::time_point deadline) {
  return send_with(fd, data, {std::chrono::milliseconds(0), deadline});
}

Status recv_all_by(int fd, std::span<std::byte> dst, Clock::time_point deadline) {
  return recv_with(fd, dst, {std::chrono::milliseconds(0), deadline});
}

}  // namespace rrs
