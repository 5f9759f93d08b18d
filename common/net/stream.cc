#include "common/net/stream.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace rrs {

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

SocketStream::SocketStream(UniqueFd fd) : fd_(std::move(fd)) { set_nonblocking(fd_.get()); }

Result<ReadProgress> SocketStream::read_some(std::span<char> dst) {
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), dst.data(), dst.size(), 0);
    if (n > 0) return ReadProgress{static_cast<size_t>(n), false};
    if (n == 0) return ReadProgress{0, true};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wants_ = POLLIN;
      return ReadProgress{};
    }
    return Status::from_errno("read").as(ErrorKind::kUnavailable);
  }
}

Result<size_t> SocketStream::write_some(std::string_view src) {
  for (;;) {
    const ssize_t n = ::send(fd_.get(), src.data(), src.size(), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wants_ = POLLOUT;
      return size_t{0};
    }
    return Status::from_errno("write").as(ErrorKind::kUnavailable);
  }
}

Status wait_for(Stream& stream, Clock::time_point deadline, const std::string& step) {
  if (stream.buffered()) return {};
  pollfd p{stream.fd(), stream.wants(), 0};
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) return {};
    if (n == 0) return Status::error(step, "timed out", ETIMEDOUT).as(ErrorKind::kUnavailable);
    if (errno != EINTR) return Status::from_errno(step).as(ErrorKind::kUnavailable);
  }
}

Status write_all(Stream& stream, std::string_view data, const WaitLimit& limit,
                 const std::string& step) {
  while (!data.empty()) {
    auto put = stream.write_some(data);
    if (!put.ok()) return put.status().wrap(step);
    if (*put > 0) {
      data.remove_prefix(*put);
      continue;
    }
    RRS_RETURN_IF_ERROR(wait_for(stream, limit.next(), step));
  }
  return {};
}

Status read_all(Stream& stream, std::span<std::byte> dst, const WaitLimit& limit,
                const std::string& step) {
  auto* at = reinterpret_cast<char*>(dst.data());
  size_t left = dst.size();
  while (left > 0) {
    auto got = stream.read_some(std::span<char>(at, left));
    if (!got.ok()) return got.status().wrap(step);
    if (got->closed)
      return Status::error(step, "the peer closed the connection", ECONNRESET)
          .as(ErrorKind::kUnavailable);
    if (got->bytes > 0) {
      at += got->bytes;
      left -= got->bytes;
      continue;
    }
    RRS_RETURN_IF_ERROR(wait_for(stream, limit.next(), step));
  }
  return {};
}

Result<size_t> read_by(Stream& stream, std::span<char> dst, Clock::time_point deadline,
                       const std::string& step) {
  for (;;) {
    auto got = stream.read_some(dst);
    if (!got.ok()) return got.status().wrap(step);
    if (got->bytes > 0) return got->bytes;
    if (got->closed)
      return Status::error(step, "connection closed by the peer").as(ErrorKind::kUnavailable);
    RRS_RETURN_IF_ERROR(wait_for(stream, deadline, step));
  }
}

}  // namespace rrs
