#include "client/replica/pending_peer.h"

#include <sys/socket.h>

#include <cerrno>

namespace rrs {
namespace {

constexpr size_t kReadChunk = size_t{16} * 1024;

Status dropped(std::string reason) {
  return Status::error("replica handshake", std::move(reason)).as(ErrorKind::kUnavailable);
}

}  // namespace

Status PendingPeer::read() {
  char buf[kReadChunk];
  const ssize_t got = ::recv(fd.get(), buf, sizeof buf, 0);
  if (got == 0) return dropped(name + " closed the connection");
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return {};
    return Status::from_errno("replica handshake with " + name).as(ErrorKind::kUnavailable);
  }
  received += static_cast<size_t>(got);
  last_heard = Clock::now();
  if (received > kMaxHandshakeBytes)
    return dropped(name + " sent more than " + std::to_string(kMaxHandshakeBytes) +
                   " bytes without the target's PSYNC: not a Redis replica");
  parser.feed(std::string_view(buf, static_cast<size_t>(got)));
  return {};
}

Status PendingPeer::reply(std::string_view bytes) const {
  const ssize_t put = ::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (put == static_cast<ssize_t>(bytes.size())) return {};
  if (put < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    return Status::from_errno("answer " + name + "'s handshake").as(ErrorKind::kUnavailable);
  return dropped(name + " does not read its handshake answers: not a Redis replica");
}

}  // namespace rrs
