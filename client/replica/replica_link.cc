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
#include "common/tls/tls_stream.h"

namespace rrs {
namespace {

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

uint16_t port_of(const sockaddr_storage& sa) {
  return ntohs(sa.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&sa)->sin_port
                                       : reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_port);
}

// A pending peer that is not the target: the link drops it and keeps waiting.
Status not_the_target(const PendingPeer& peer, const std::string& why) {
  return Status::error("replica handshake",
                       "refused " + peer.name + ": " + why + ": not the target")
      .as(ErrorKind::kUnavailable);
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
                                        std::chrono::milliseconds io_timeout,
                                        std::shared_ptr<const TlsContext> tls) {
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
  // The backlog only holds connections until the next accept: the pending
  // set (kMaxPendingPeers) is what bounds them.
  if (::bind(fd.get(), res->ai_addr, res->ai_addrlen) != 0 ||
      ::listen(fd.get(), static_cast<int>(kMaxPendingPeers)) != 0)
    return Status::from_errno(step);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return Status::from_errno(step);
  ReplicaLink link;
  link.endpoint_.host = local_host(fd.get());
  link.endpoint_.port = port_of(sa);
  link.listener_ = std::move(fd);
  link.target_ip_ = std::move(target_ip);
  link.io_timeout_ = io_timeout;
  link.tls_ = std::move(tls);
  return link;
}

void ReplicaLink::accept_pending(std::vector<PendingPeer>& pending) {
  while (true) {
    sockaddr_storage sa{};
    socklen_t sa_len = sizeof sa;
    UniqueFd c(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&sa), &sa_len,
                         SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!c) {
      if (errno == ECONNABORTED || errno == EINTR) continue;
      return;  // the backlog is empty (or out of fds: the next round retries)
    }
    const std::string host = peer_host(c.get());
    if (host != target_ip_) {
      log::warn_limited("replica link refused", "refused a connection from " + host +
                                                    " to the replica link (only the target, " +
                                                    target_ip_ + ", may connect)");
      continue;
    }
    if (pending.size() >= kMaxPendingPeers) {
      // Full. The target speaks as soon as it connects and answers each
      // reply at once, so the peer silent longest is the one to go: N silent
      // connections cannot keep the target out.
      auto idlest = std::min_element(pending.begin(), pending.end(),
                                     [](const PendingPeer& a, const PendingPeer& b) {
                                       return a.last_heard < b.last_heard;
                                     });
      log::warn_limited("replica link dropped",
                        "dropped " + idlest->name +
                            " from the replica link: " + std::to_string(kMaxPendingPeers) +
                            " connections were pending and it had been silent longest");
      pending.erase(idlest);
    }
    disable_nagle(c.get());
    enable_tcp_keepalive(c.get());
    std::string name = host + ":" + std::to_string(port_of(sa));
    if (!tls_) {
      pending.emplace_back(std::make_unique<SocketStream>(std::move(c)), std::move(name));
      continue;
    }
    // The handshake runs as the peer is read (PendingPeer::read).
    auto stream = TlsStream::start(std::move(c), *tls_, "", "the target's address " + name);
    if (!stream.ok()) {
      log::warn_limited("replica link refused", stream.status().message());
      continue;
    }
    pending.emplace_back(std::move(*stream), std::move(name));
  }
}

Result<bool> ReplicaLink::answer(PendingPeer& peer, const resp::Command& cmd,
                                 std::string_view replid, uint64_t offset,
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
        peer.capa_eof = true;
    reply = "+OK\r\n";
  } else if (is_command(cmd, "psync") && cmd.args.size() == 3) {
    std::string request = "PSYNC " + log::printable(cmd.args[1]) + " " +
                          log::printable(cmd.args[2]);
    if (!continues(cmd.args[1], cmd.args[2], target))
      return not_the_target(
          peer, "it asked for " + request + ", but the target continues its own history, PSYNC " +
                    target.replid + " " + std::to_string(target.offset + 1) + " or later");
    // Its own history: this is the target, and what it lacks ends the wait.
    if (!peer.capa_eof)
      return handshake_error(
          "the target did not offer REPLCONF capa eof (Redis older than 2.8.18?), so it cannot "
          "take an RDB streamed as it is written; use --mode restore");
    psync_request_ = std::move(request);
    eof_mark_ = random_run_id();
    reply = "+FULLRESYNC " + std::string(replid) + " " + std::to_string(offset) +
            "\r\n$EOF:" + eof_mark_ + "\r\n";
    done = true;
  } else if (is_command(cmd, "sync")) {
    // Only Redis before 2.8 sends SYNC, and a target that old has no
    // replication ID and was refused before REPLICAOF (replicate_from).
    return not_the_target(peer, "it sent SYNC, and the target (Redis 4.0 or later) sends PSYNC");
  } else {
    reply = "-ERR this is rdma-client's replica link, not a Redis server\r\n";
  }
  RRS_RETURN_IF_ERROR(peer.reply(reply));
  return done;
}

Result<bool> ReplicaLink::serve(PendingPeer& peer, std::string_view replid, uint64_t offset,
                                const TargetHistory& target) {
  RRS_RETURN_IF_ERROR(peer.read());
  while (true) {
    auto cmd = peer.parser.next();
    if (!cmd.ok())
      return not_the_target(peer, "it sent what no replica sends (" + cmd.status().reason() + ")");
    if (!*cmd) return false;
    RRS_ASSIGN_OR_RETURN(const bool done, answer(peer, **cmd, replid, offset, target));
    if (done) return true;
  }
}

Status ReplicaLink::accept_full_sync(std::string_view replid, uint64_t offset,
                                     const TargetHistory& target, Clock::time_point deadline) {
  // Every connection from the target's address is served at once (one poll
  // over the listener and them), not one after another: the target's own
  // must not wait in the backlog while another holds the link.
  std::vector<PendingPeer> pending;
  std::vector<pollfd> fds;
  while (true) {
    const auto now = Clock::now();
    // A replica sends its next command as soon as it has its answer; one
    // silent for the I/O timeout is not (or no longer) one: free its slot.
    std::erase_if(pending, [&](const PendingPeer& p) {
      if (now - p.last_heard < io_timeout_) return false;
      log::warn_limited("replica link dropped", "dropped " + p.name +
                                                    " from the replica link: silent for " +
                                                    std::to_string(io_timeout_.count()) +
                                                    " ms; still waiting for the target");
      return true;
    });
    if (now >= deadline)
      return Status::error("wait for the target to connect to " + endpoint_.to_string(),
                           (!pending.empty() ? "no connection sent its PSYNC in time (" +
                                                   std::to_string(pending.size()) +
                                                   " from its address were still in the handshake)"
                            : last_drop_.empty()
                                ? "it did not connect in time (is this address reachable from it?)"
                                : "no connection from it got through the handshake in time") +
                               (last_drop_.empty() ? "" : "; the last one dropped: " + last_drop_))
          .as(ErrorKind::kUnavailable);
    // Wake at the deadline or when the next peer's idle limit runs out; at
    // once for one whose TLS already holds what it sent.
    Clock::time_point wake = deadline;
    fds.assign(1, pollfd{listener_.get(), POLLIN, 0});
    bool buffered = false;
    for (const PendingPeer& p : pending) {
      wake = std::min(wake, p.last_heard + io_timeout_);
      fds.push_back(pollfd{p.stream->fd(), poll_events(*p.stream, false), 0});
      buffered = buffered || p.stream->buffered();
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - now);
    const int wait_ms = buffered ? 0 : static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000));
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) return Status::from_errno("wait for the target to connect");
    if (n <= 0 && !buffered) continue;
    // The peers first (fds[i + 1] is pending[i]): accepting may evict one.
    for (size_t i = 0; i < pending.size(); ++i) {
      PendingPeer& peer = pending[i];
      if (fds[i + 1].revents == 0 && !peer.stream->buffered()) continue;
      auto won = serve(peer, replid, offset, target);
      if (won.ok() && *won) {
        // The target. The others close as `pending` goes.
        conn_ = std::move(peer.stream);
        parser_ = std::move(peer.parser);
        acked_.reset();
        return {};
      }
      if (won.ok()) continue;
      if (won.status().kind() != ErrorKind::kUnavailable) return won.status();
      last_drop_ = won.status().reason();
      log::warn_limited("replica link refused",
                        won.status().message() + "; still waiting for the target");
      peer.stream.reset();
    }
    std::erase_if(pending, [](const PendingPeer& p) { return !p.stream; });
    if (fds[0].revents != 0) accept_pending(pending);
  }
}

Status ReplicaLink::send(std::string_view bytes) {
  if (!conn_) return Status::error("send to the target", "no link").as(ErrorKind::kUnavailable);
  Status s = write_all(*conn_, bytes, io_timeout_, "write");
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
  if (!conn_->buffered()) {
    pollfd p{conn_->fd(), poll_events(*conn_, false), 0};
    const int n = ::poll(&p, 1, static_cast<int>(wait.count()));
    if (n < 0 && errno != EINTR) return Status::from_errno("read from the target");
    if (n <= 0) return {};
  }
  // What has arrived, without waiting for more.
  char buf[kReadChunk];
  while (true) {
    auto got = conn_->read_some(buf);
    if (!got.ok()) return got.status().wrap("read from the target").as(ErrorKind::kUnavailable);
    if (got->closed)
      return Status::error("the replica link", "the target closed it (its log says why)")
          .as(ErrorKind::kUnavailable);
    if (got->bytes == 0) break;
    parser_.feed(std::string_view(buf, got->bytes));
    if (got->bytes < sizeof buf && !conn_->buffered()) break;
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
