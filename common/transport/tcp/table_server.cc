#include "common/transport/tcp/table_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netdb.h>

#include <cstring>

#include "common/auth/auth.h"
#include "common/base/log.h"
#include "common/net/socket.h"

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
  void refuse_full() {
    reject(0, ErrorCode::kServerFull,
           "already serving " + std::to_string(server_.limits_.access.max_clients) +
               " clients (--max-clients); try again later");
  }
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
    const bool handshaking = !ready();
    const auto& a = server_.limits_.access;
    reject(0, ErrorCode::kIdle,
           handshaking ? "no HELLO/AUTH within " + std::to_string(a.handshake_timeout.count()) + " ms"
                       : "no request for " + std::to_string(a.idle_timeout.count()) +
                             " s (--idle-timeout)");
  }

  void set_read_timeout(std::chrono::milliseconds t) {
    if (t.count() == 0) {
      bufferevent_set_timeouts(bev_, nullptr, nullptr);
      return;
    }
    const timeval tv = to_timeval(t);
    bufferevent_set_timeouts(bev_, &tv, nullptr);
  }

  // HELLO said, and AUTH passed if the server has a secret.
  bool ready() const { return said_hello_ && (authenticated_ || !server_.limits_.access.secret); }

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
      if (!h.ok()) return reject(0, ErrorCode::kBadMessage, h.status().reason());
      if (evbuffer_get_length(in) < sizeof raw + h->body_len) return;
      std::byte body[control::kMaxRequestBody];
      evbuffer_drain(in, sizeof raw);
      evbuffer_remove(in, body, h->body_len);
      handle_frame(*h, std::span<const std::byte>(body, h->body_len));
    }
  }

  void handle_frame(const control::FrameHeader& h, std::span<const std::byte> body) {
    switch (h.type) {
      case MsgType::kHello: {
        auto m = control::decode_hello(body);
        if (!m.ok())
          return reject(h.request_id, control::hello_refusal(body), m.status().reason());
        auto v = control::negotiate_version(*m);
        if (!v.ok())
          return reject(h.request_id, ErrorCode::kUnsupportedVersion, v.status().reason());
        if (said_hello_) return reject(h.request_id, ErrorCode::kBadMessage, "a second HELLO");
        control::HelloOk ok;
        ok.version = *v;
        ok.max_read_len = control::kMaxReadLength;
        ok.max_in_flight = server_.limits_.max_in_flight;
        ok.auth_required = server_.limits_.access.secret.has_value();
        ok.server_nonce = auth::random_nonce();
        client_nonce_ = m->client_nonce;
        server_nonce_ = ok.server_nonce;
        said_hello_ = true;
        if (ready()) set_read_timeout(server_.limits_.access.idle_timeout);
        return send_frame([&](std::string& o) { control::append_hello_ok(o, h.request_id, ok); });
      }
      case MsgType::kAuth:
        return handle_auth(h.request_id, body);
      case MsgType::kGetDescriptor: {
        if (!ready()) return not_ready(h.request_id);
        if (!body.empty()) return reject(h.request_id, ErrorCode::kBadMessage, "unexpected body");
        const TablePtr& t = server_.table_;
        if (!t) return reject(h.request_id, ErrorCode::kNotReady, "no table published yet");
        control::Descriptor d;
        d.epoch = t->epoch();
        d.table_length = t->header.total_size;
        d.layout_version = t->header.layout_version;
        d.transport = control::TransportKind::kTcp;
        if (t->log) {
          d.log_id = t->log->id();
          d.log_length = t->log->memory().size();
        }
        return send_frame([&](std::string& o) { control::append_descriptor(o, h.request_id, d); });
      }
      case MsgType::kRead:
        if (!ready()) return not_ready(h.request_id);
        return handle_read(h.request_id, body);
      default:
        return reject(h.request_id, ErrorCode::kBadMessage,
                      "message type " + std::to_string(static_cast<int>(h.type)) +
                          " is not a request");
    }
  }

  void not_ready(uint32_t request_id) {
    if (!said_hello_) return reject(request_id, ErrorCode::kBadMessage, "HELLO first");
    reject(request_id, ErrorCode::kAuthFailed,
           "this rdma-server requires the shared secret: the client must AUTH first "
           "(rdma-client --auth-file)");
  }

  // The client's proof of the shared secret, against this connection's
  // nonces. Right: AUTH_OK with our own proof. Wrong: logged with the peer,
  // and the client is told (nothing else is revealed).
  void handle_auth(uint32_t request_id, std::span<const std::byte> body) {
    const auto& secret = server_.limits_.access.secret;
    if (!said_hello_) return reject(request_id, ErrorCode::kBadMessage, "HELLO first");
    if (!secret || authenticated_)
      return reject(request_id, ErrorCode::kBadMessage, "AUTH not asked for");
    auto proof = control::decode_auth(body);
    if (!proof.ok()) return reject(request_id, ErrorCode::kBadMessage, proof.status().reason());
    if (!auth::proofs_equal(*proof, auth::client_proof(*secret, client_nonce_, server_nonce_)))
      return reject(request_id, ErrorCode::kAuthFailed,
                    "wrong shared secret (compare the client's and the server's --auth-file)");
    authenticated_ = true;
    log::info("client " + peer_ + " authenticated");
    set_read_timeout(server_.limits_.access.idle_timeout);
    send_frame([&](std::string& o) {
      control::append_auth(o, request_id, MsgType::kAuthOk,
                           auth::server_proof(*secret, client_nonce_, server_nonce_));
    });
  }

  // A READ of the current table (sent by reference: it never changes) or of
  // its change log. The log is being written while we read it: its bytes are
  // copied now, and the client checks by the seqlock rule that the copy was
  // intact. A replaced table or log is "epoch gone", not the client's fault:
  // it may fetch the new descriptor and start over.
  void handle_read(uint32_t request_id, std::span<const std::byte> body) {
    auto m = control::decode_read(body);
    if (!m.ok()) return reject(request_id, ErrorCode::kBadMessage, m.status().reason());
    const TablePtr& t = server_.table_;
    if (!t) return reject(request_id, ErrorCode::kNotReady, "no table published yet");
    const bool log = m->region == control::Region::kChangeLog;
    if (log ? !t->log || m->epoch != t->log->id() : m->epoch != t->epoch()) {
      std::string o;
      control::append_error(
          o, request_id,
          {ErrorCode::kEpochGone, (log ? "change log " : "epoch ") + std::to_string(m->epoch) +
                                      " is no longer served (now epoch " +
                                      std::to_string(t->epoch()) + ")"});
      evbuffer_add(output(), o.data(), o.size());
      return;
    }
    const std::span<const std::byte> region =
        log ? t->log->memory() : t->bytes.span().first(t->header.total_size);
    if (m->length == 0 || m->length > control::kMaxReadLength)
      return reject(request_id, ErrorCode::kTooLarge,
                    "read length " + std::to_string(m->length) + " outside 1.." +
                        std::to_string(control::kMaxReadLength));
    if (m->offset > region.size() || m->length > region.size() - m->offset)
      return reject(request_id, ErrorCode::kOutOfRange,
                    "range " + std::to_string(m->offset) + "+" + std::to_string(m->length) +
                        " is outside the " + (log ? "change log" : "table") + " of " +
                        std::to_string(region.size()) + " bytes");
    std::string o;
    control::append_read_data_header(o, request_id, m->length);
    evbuffer_add(output(), o.data(), o.size());
    if (log)
      evbuffer_add(output(), region.data() + m->offset, m->length);
    else
      evbuffer_add_reference(output(), region.data() + m->offset, m->length, release_table_ref,
                             new TablePtr(t));
  }

  template <typename Fn>
  void send_frame(Fn&& build) {
    std::string o;
    build(o);
    evbuffer_add(output(), o.data(), o.size());
  }

  // Answers with an error and closes once it is flushed: a peer that sends
  // garbage gets told why, and nothing more.
  void reject(uint32_t request_id, ErrorCode code, const std::string& why) {
    log::warn("client " + peer_ + ": " + control::error_code_name(code) + ": " + why +
              "; disconnecting it");
    send_frame([&](std::string& o) { control::append_error(o, request_id, {code, why}); });
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
  bool said_hello_ = false;
  bool authenticated_ = false;
  control::Nonce client_nonce_{}, server_nonce_{};
  bool closing_ = false;
};

Result<std::unique_ptr<TcpTableServer>> TcpTableServer::listen(event_base* base,
                                                               const Endpoint& at,
                                                               TcpServerLimits limits) {
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
    return Status::from_errno(step, err).wrap(err == EADDRINUSE ? "is another rdma-server running? pick --port" : "start server");
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
  bufferevent* bev =
      bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  auto* c = new Client(*self, bev, peer_name(addr));
  const bool full = self->clients_.size() >= self->limits_.access.max_clients;
  self->clients_.insert(c);
  if (full) c->refuse_full();
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
