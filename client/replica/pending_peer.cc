#include "client/replica/pending_peer.h"

namespace rrs {
namespace {

constexpr size_t kReadChunk = size_t{16} * 1024;

Status dropped(std::string reason) {
  return Status::error("replica handshake", std::move(reason)).as(ErrorKind::kUnavailable);
}

}  // namespace

Status PendingPeer::read() {
  char buf[kReadChunk];
  auto got = stream->read_some(buf);
  if (!got.ok()) return dropped(name + ": " + got.status().reason());
  if (got->closed) return dropped(name + " closed the connection");
  if (got->bytes == 0) return {};
  received += got->bytes;
  last_heard = Clock::now();
  if (received > kMaxHandshakeBytes)
    return dropped(name + " sent more than " + std::to_string(kMaxHandshakeBytes) +
                   " bytes without the target's PSYNC: not a Redis replica");
  parser.feed(std::string_view(buf, got->bytes));
  return {};
}

Status PendingPeer::reply(std::string_view bytes) const {
  auto put = stream->write_some(bytes);
  if (!put.ok()) return dropped("answer " + name + "'s handshake: " + put.status().message());
  if (*put == bytes.size()) return {};
  return dropped(name + " does not read its handshake answers: not a Redis replica");
}

}  // namespace rrs
