#include "client/replica/replica_link.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <random>

#include "common/base/log.h"

namespace rrs {
namespace {

// A replica's whole handshake is a few hundred bytes; a peer that sends this
// much without a PSYNC is not a Redis replica.
constexpr size_t kMaxHandshakeBytes = size_t{64} * 1024;
constexpr size_t kReadChunk = size_t{16} * 1024;

bool is_command(const resp::Command& cmd, std::string_view name) {
  if (cmd.args.empty() || cmd.args[0].size() != name.size()) return false;
  return std::equal(name.begin(), name.end(), cmd.args[0].begin(),
                    [](char a, char b) { return a == (b | 0x20); });
}

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

// Whether a PSYNC's arguments continue the target's own history: its
// replication ID, from past the offset it had (it may have grown since).
// "PSYNC ? -1" never does: any process can send it.
bool continues(std::string_view replid, std::string_view offset, const TargetHistory& target) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(offset.data(), offset.data() + offset.size(), v);
  return !target.replid.empty() && replid == target.replid && !offset.empty() &&
         ec == std::errc() && end == offset.data() + offset.size() && v > target.offset;
}

Status handshake_error(std::string reason) {
  return Status::error("replica handshake with the target", std::move(reason))
      .as(ErrorKind::kBadData);
}

}  // namespace

std::string random_run_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device rd;
  std::string id(40, '0');
  for (char& c : id) c = kHex[rd() % 16];
  return id;
}

Result<ReplicaLink> ReplicaLink::listen(const std::string& local_ip, std::string target_ip,
                                        std::chrono::milliseconds io_timeout) {
  const std::string step = "listen on " + local_ip + " for the target";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(local_ip.c_str(), "0", &hints, &res); rc != 0)
    return Status::error(step, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  UniqueFd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Status::from_errno(step);
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd.get(), 4) != 0)
    return Status::from_errno(step);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return Status::from_errno(step);
  ReplicaLink link;
  link.endpoint_.host = local_host(fd.get());
  link.endpoint_.port = ntohs(sa.ss_family == AF_INET
                                  ? reinterpret_cast<sockaddr_in*>(&sa)->sin_port
                                  : reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port);
  link.listener_ = std::move(fd);
  link.target_ip_ = std::move(target_ip);
  link.io_timeout_ = io_timeout;
  return link;
}

Status ReplicaLink::accept_target(Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            Clock::now());
    if (left.count() <= 0)
      return Status::error("wait for the target to connect to " + endpoint_.to_string(),
                           "it did not connect in time (is this address reachable from it?)")
          .as(ErrorKind::kUnavailable);
    pollfd p{listener_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) return Status::from_errno("wait for the target to connect");
    if (n <= 0) continue;
    sockaddr_storage sa{};
    socklen_t sa_len = sizeof sa;
    UniqueFd c(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&sa), &sa_len,
                         SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!c) continue;
    const std::string peer = peer_host(c.get());
    if (peer != target_ip_) {
      log::warn("refused a connection from " + peer + " to the replica link (only the target, " +
                target_ip_ + ", may connect)");
      continue;
    }
    peer_ = peer + ":" +
            std::to_string(ntohs(sa.ss_family == AF_INET
                                     ? reinterpret_cast<sockaddr_in*>(&sa)->sin_port
                                     : reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port));
    disable_nagle(c.get());
    enable_tcp_keepalive(c.get());
    conn_ = std::move(c);
    return {};
  }
}

Result<bool> ReplicaLink::answer(const resp::Command& cmd, std::string_view replid, uint64_t offset,
                                 const TargetHistory& target) {
  std::string reply;
  bool done = false;
  if (is_command(cmd, "ping")) {
    reply = "+PONG\r\n";
  } else if (is_command(cmd, "auth")) {
    // The target's masterauth: this link exists only for it, so any will do.
    reply = "+OK\r\n";
  } else if (is_command(cmd, "replconf")) {
    for (size_t i = 1; i + 1 < cmd.args.size(); i += 2)
      if (equals_nocase(cmd.args[i], "capa") && equals_nocase(cmd.args[i + 1], "eof"))
        capa_eof_ = true;
    reply = "+OK\r\n";
  } else if (is_command(cmd, "psync") && cmd.args.size() == 3) {
    psync_request_ = "PSYNC " + log::printable(cmd.args[1]) + " " + log::printable(cmd.args[2]);
    if (!continues(cmd.args[1], cmd.args[2], target))
      return Status::error("replica handshake",
                           "refused " + peer_ + ": it asked for " + psync_request_ +
                               ", but the target continues its own history, PSYNC " +
                               target.replid + " " + std::to_string(target.offset + 1) +
                               " or later: not the target")
          .as(ErrorKind::kUnavailable);
    if (!capa_eof_)
      return handshake_error(
          "the target did not offer REPLCONF capa eof (Redis older than 2.8.18?), so it cannot "
          "take an RDB streamed as it is written; use --mode restore");
    eof_mark_ = random_run_id();
    reply = "+FULLRESYNC " + std::string(replid) + " " + std::to_string(offset) +
            "\r\n$EOF:" + eof_mark_ + "\r\n";
    done = true;
  } else if (is_command(cmd, "sync")) {
    return handshake_error("the target sent SYNC (Redis older than 2.8): use --mode restore");
  } else {
    reply = "-ERR this is rdma-client's replica link, not a Redis server\r\n";
  }
  RRS_RETURN_IF_ERROR(send(reply));
  return done;
}

Status ReplicaLink::accept_full_sync(std::string_view replid, uint64_t offset,
                                     const TargetHistory& target, Clock::time_point deadline) {
  while (true) {
    RRS_RETURN_IF_ERROR(accept_target(deadline));
    Status s = handshake(replid, offset, target, deadline);
    // Not the target, or a connection that went away: wait for the next.
    if (s.ok() || s.kind() != ErrorKind::kUnavailable || Clock::now() >= deadline) return s;
    log::warn(s.message() + "; waiting for the target to connect again");
    conn_.reset();
  }
}

Status ReplicaLink::handshake(std::string_view replid, uint64_t offset, const TargetHistory& target,
                              Clock::time_point deadline) {
  parser_ = resp::CommandParser();
  capa_eof_ = false;
  acked_.reset();
  size_t received = 0;
  char buf[kReadChunk];
  while (true) {
    auto cmd = parser_.next();
    if (!cmd.ok()) return cmd.status().wrap("replica handshake with the target");
    if (*cmd) {
      auto done = answer(**cmd, replid, offset, target);
      if (!done.ok()) return done.status();
      if (*done) return {};
      continue;
    }
    if (received > kMaxHandshakeBytes)
      return handshake_error("more than " + std::to_string(kMaxHandshakeBytes) +
                             " bytes without a PSYNC");
    pollfd p{conn_.get(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(std::min(
        deadline - Clock::now(), std::chrono::duration_cast<Clock::duration>(io_timeout_)));
    int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n == 0)
      return Status::error("replica handshake with the target", "timed out waiting for it")
          .as(ErrorKind::kUnavailable);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::from_errno("replica handshake with the target").as(ErrorKind::kUnavailable);
    }
    ssize_t got = ::recv(conn_.get(), buf, sizeof buf, 0);
    if (got == 0)
      return Status::error("replica handshake with the target",
                           "it closed the connection (its log says why)")
          .as(ErrorKind::kUnavailable);
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Status::from_errno("replica handshake with the target").as(ErrorKind::kUnavailable);
    }
    received += static_cast<size_t>(got);
    parser_.feed(std::string_view(buf, static_cast<size_t>(got)));
  }
}

Status ReplicaLink::send(std::string_view bytes) {
  if (!conn_) return Status::error("send to the target", "no link").as(ErrorKind::kUnavailable);
  Status s = send_all(conn_.get(), bytes, io_timeout_);
  if (!s.ok())
    return s.wrap("send to the target over the replica link").as(ErrorKind::kUnavailable);
  return {};
}

Status ReplicaLink::take_ack(const resp::Command& cmd) {
  // REPLCONF ACK <offset> [FACK <aof offset>]; nothing else is expected.
  if (!is_command(cmd, "replconf") || cmd.args.size() < 3 || !equals_nocase(cmd.args[1], "ack"))
    return {};
  uint64_t v = 0;
  const std::string_view digits = cmd.args[2];
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return Status::error("read the target's REPLCONF ACK",
                         "not an offset: '" + log::printable(digits) + "'")
        .as(ErrorKind::kBadData);
  acked_ = v;
  return {};
}

Status ReplicaLink::poll(std::chrono::milliseconds wait) {
  if (!conn_) return Status::error("read from the target", "no link").as(ErrorKind::kUnavailable);
  char buf[kReadChunk];
  bool first = true;
  while (true) {
    if (first) {
      pollfd p{conn_.get(), POLLIN, 0};
      int n = ::poll(&p, 1, static_cast<int>(wait.count()));
      if (n < 0 && errno != EINTR) return Status::from_errno("read from the target");
      if (n <= 0) return {};
      first = false;
    }
    ssize_t got = ::recv(conn_.get(), buf, sizeof buf, 0);
    if (got == 0)
      return Status::error("the replica link", "the target closed it (its log says why)")
          .as(ErrorKind::kUnavailable);
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return Status::from_errno("read from the target").as(ErrorKind::kUnavailable);
    }
    parser_.feed(std::string_view(buf, static_cast<size_t>(got)));
    if (static_cast<size_t>(got) < sizeof buf) break;
  }
  while (true) {
    auto cmd = parser_.next();
    if (!cmd.ok()) return cmd.status().wrap("read the target's acknowledgements");
    if (!*cmd) return {};
    RRS_RETURN_IF_ERROR(take_ack(**cmd));
  }
}

Result<bool> ReplicaLink::wait_ack(uint64_t offset, Clock::time_point deadline) {
  while (!acked_ || *acked_ < offset) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            Clock::now());
    if (left.count() <= 0) return false;
    RRS_RETURN_IF_ERROR(
        poll(std::min<std::chrono::milliseconds>(left, std::chrono::milliseconds(200))));
  }
  return true;
}

}  // namespace rrs
