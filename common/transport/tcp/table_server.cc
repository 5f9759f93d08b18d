#include "common/transport/tcp/table_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netdb.h>

#include <cstring>

#include "common/base/log.h"
#include "common/net/socket.h"
#include "common/transport/control_session.h"

namespace rrs {

using control::ErrorCode;
using control::MsgType;

namespace {

std::string peer_name(const sockaddr* addr) {
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  socklen_t len = addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  getnameinfo(addr, len, host, sizeof host, port, sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

constexpr size_t kMaxSingleWrite = 4u << 20;

// Keeps the table alive while the kernel still has to send bytes from it.
void release_table_ref(const void*, size_t, void* holder) { delete static_cast<TablePtr*>(holder); }

}  // namespace

// One client connection. Lives until the peer goes away or misbehaves.
class TcpTableServer::Client {
 public:
  Client(TcpTableServer& server, bufferevent* bev, std::string peer)
      : server_(server), bev_(bev), peer_(std::move(peer)) {
    bufferevent_setcb(bev_, on_read, on_write, on_event, this);
    // libevent writes 16 KiB per loop turn by default; table reads are MiBs.
    bufferevent_set_max_single_write(bev_, kMaxSingleWrite);
    set_read_timeout(server_.limits_.access.handshake_timeout);
    bufferevent_enable(bev_, EV_READ | EV_WRITE);
  }

  // A new connection over --max-clients: told why, then closed.
  void refuse(const Refusal& r) { reject(0, r); }
  ~Client() { bufferevent_free(bev_); }

 private:
  static void on_read(bufferevent*, void* arg) { static_cast<Client*>(arg)->handle_input(); }
  static void on_write(bufferevent*, void* arg) {
    auto* c = static_cast<Client*>(arg);
    if (c->closing_) {
      c->server_.drop(c);
      return;
    }
    c->handle_input();  // output drained below the mark: resume reading requests
  }
  static void on_event(bufferevent*, short what, void* arg) {
    auto* c = static_cast<Client*>(arg);
    if (what & BEV_EVENT_TIMEOUT) return c->timed_out();
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) c->server_.drop(c);
  }

  // No bytes from the client for the current read timeout: during the
  // handshake it has kept a slot without saying who it is; afterwards it is
  // idle. Either way it is told, and dropped.
  void timed_out() {
    if (closing_) return server_.drop(this);
    reject(0, session_.timed_out());
  }

  void set_read_timeout(std::chrono::milliseconds t) {
    if (t.count() == 0) {
      bufferevent_set_timeouts(bev_, nullptr, nullptr);
      return;
    }
    const timeval tv = to_timeval(t);
    bufferevent_set_timeouts(bev_, &tv, nullptr);
  }

  evbuffer* output() { return bufferevent_get_output(bev_); }

  // Parses as many complete frames as are buffered, unless our answers are
  // piling up unread: then we wait for the output to drain first.
  void handle_input() {
    evbuffer* in = bufferevent_get_input(bev_);
    while (!closing_) {
      if (evbuffer_get_length(output()) > server_.limits_.max_queued_bytes) {
        bufferevent_setwatermark(bev_, EV_WRITE, server_.limits_.max_queued_bytes / 2, 0);
        return;
      }
      std::byte raw[control::kFrameHeaderSize];
      if (evbuffer_copyout(in, raw, sizeof raw) < static_cast<ev_ssize_t>(sizeof raw)) return;
      auto h = control::decode_frame_header(raw, control::kMaxRequestBody);
      if (!h.ok()) return reject(0, {ErrorCode::kBadMessage, h.status().reason()});
      if (evbuffer_get_length(in) < sizeof raw + h->body_len) return;
      std::byte body[control::kMaxRequestBody];
      evbuffer_drain(in, sizeof raw);
      evbuffer_remove(in, body, h->body_len);
      handle_frame(*h, std::span<const std::byte>(body, h->body_len));
    }
  }

  // The session decides; this only moves its answers into the output buffer.
  void handle_frame(const control::FrameHeader& h, std::span<const std::byte> body) {
    const uint32_t id = h.request_id;
    switch (h.type) {
      case MsgType::kHello: {
        auto ok = session_.on_hello(body);
        if (!ok.ok()) return reject(id, ok.refusal());
        if (session_.ready()) set_read_timeout(server_.limits_.access.idle_timeout);
        return send_frame([&](std::string& o) { control::append_hello_ok(o, id, *ok); });
      }
      case MsgType::kAuth: {
        auto proof = session_.on_auth(body);
        if (!proof.ok()) return reject(id, proof.refusal());
        log::info("client " + peer_ + " authenticated");
        set_read_timeout(server_.limits_.access.idle_timeout);
        return send_frame(
            [&](std::string& o) { control::append_auth(o, id, MsgType::kAuthOk, *proof); });
      }
      case MsgType::kGetDescriptor: {
        auto d = session_.on_get_descriptor(body, server_.table_);
        if (!d.ok()) return reject(id, d.refusal());
        return send_frame([&](std::string& o) { control::append_descriptor(o, id, *d); });
      }
      case MsgType::kRead: return handle_read(id, body);
      default: return reject(id, session_.not_a_request(h.type));
    }
  }

  // Table bytes are sent by reference (a table never changes); change log
  // bytes are copied now (the log is being written; the client checks by the
  // seqlock rule that the copy was intact). "epoch gone" leaves the
  // connection open.
  void handle_read(uint32_t request_id, std::span<const std::byte> body) {
    auto answer = session_.on_read(body, server_.table_);
    if (!answer.ok()) {
      if (!session_.closing())
        return send_frame([&](std::string& o) {
          control::append_error(o, request_id, {answer.refusal().code, answer.refusal().why});
        });
      return reject(request_id, answer.refusal());
    }
    const auto bytes = answer->bytes;
    send_frame([&](std::string& o) {
      control::append_read_data_header(o, request_id, static_cast<uint32_t>(bytes.size()));
    });
    if (answer->from_log)
      evbuffer_add(output(), bytes.data(), bytes.size());
    else
      evbuffer_add_reference(output(), bytes.data(), bytes.size(), release_table_ref,
                             new TablePtr(server_.table_));
  }

  template <typename Fn>
  void send_frame(Fn&& build) {
    std::string o;
    build(o);
    evbuffer_add(output(), o.data(), o.size());
  }

  // Answers with an error and closes once it is flushed: a peer that sends
  // garbage gets told why, and nothing more.
  void reject(uint32_t request_id, const Refusal& r) {
    log::warn("client " + peer_ + ": " + control::error_code_name(r.code) + ": " + r.why +
              "; disconnecting it");
    send_frame([&](std::string& o) { control::append_error(o, request_id, {r.code, r.why}); });
    closing_ = true;
    bufferevent_disable(bev_, EV_READ);
    bufferevent_setwatermark(bev_, EV_WRITE, 0, 0);
    // A peer that never reads the ERROR does not keep its slot either.
    const timeval tv = to_timeval(server_.limits_.access.handshake_timeout);
    bufferevent_set_timeouts(bev_, nullptr, &tv);
  }

  TcpTableServer& server_;
  bufferevent* bev_;
  std::string peer_;
  ServerSession session_{server_.terms_};
  bool closing_ = false;
};

Result<std::unique_ptr<TcpTableServer>> TcpTableServer::listen(event_base* base, const Endpoint& at,
                                                               const TcpServerLimits& limits) {
  std::unique_ptr<TcpTableServer> s(new TcpTableServer(base, limits));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(at.port);
  const std::string step = "listen on " + at.to_string();
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::error(step, std::string("cannot resolve address: ") + gai_strerror(rc));
  evconnlistener* l = evconnlistener_new_bind(
      base, on_accept, s.get(), LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
      128, res->ai_addr, static_cast<int>(res->ai_addrlen));
  int err = errno;
  freeaddrinfo(res);
  if (l == nullptr)
    return Status::from_errno(step, err).wrap(
        err == EADDRINUSE ? "is another rdma-server running? pick --port" : "start server");
  s->listener_.reset(l);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(evconnlistener_get_fd(l), reinterpret_cast<sockaddr*>(&bound), &len);
  s->bound_ = at;
  s->bound_.port = ntohs(bound.ss_family == AF_INET6
                             ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return s;
}

TcpTableServer::~TcpTableServer() {
  for (Client* c : clients_) delete c;
}

void TcpTableServer::on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int,
                               void* arg) {
  auto* self = static_cast<TcpTableServer*>(arg);
  enable_tcp_keepalive(fd);  // a client whose host dies goes away on its own
  disable_nagle(fd);         // a follower's small header READs are answered at once
  bufferevent* bev = bufferevent_socket_new(self->base_, fd,
                                            BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  auto* c = new Client(*self, bev, peer_name(addr));
  auto full = ServerSession::admit(self->clients_.size(), self->limits_.access);
  self->clients_.insert(c);
  if (full) c->refuse(*full);
}

void TcpTableServer::drop(Client* c) {
  if (clients_.erase(c)) delete c;
}

void TcpTableServer::disconnect_all() {
  for (Client* c : clients_) delete c;
  clients_.clear();
}

Status TcpTableServer::publish(TablePtr table) {
  table_ = std::move(table);
  return {};
}

}  // namespace rrs
