#include "common/transport/tcp/table_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netdb.h>
#include <openssl/err.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>

#include "common/base/log.h"
#include "common/net/socket.h"
#include "common/tls/tls_stream.h"
#include "common/transport/control_session.h"
#include "common/transport/serving_metrics.h"

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
//
// Its bounds: the handshake must be done within handshake_timeout of the
// accept (a deadline, not an inactivity timer); it holds a slot of
// max_clients only once authenticated; at most max_in_flight answers and
// max_queued_bytes are queued for it (past that its requests wait unread,
// first in the input buffer, then in the kernel), and each answer must be
// taken within reply_timeout.
class TcpTableServer::Client {
 public:
  Client(TcpTableServer& server, bufferevent* bev, std::string peer, std::string host)
      : server_(server), bev_(bev), peer_(std::move(peer)), host_(std::move(host)) {
    bufferevent_setcb(bev_, on_read, on_write, on_event, this);
    // libevent writes 16 KiB per loop turn by default; table reads are MiBs.
    bufferevent_set_max_single_write(bev_, kMaxSingleWrite);
    // Requests we do not parse yet (the queue is full) wait in the kernel
    // beyond this.
    bufferevent_setwatermark(bev_, EV_READ, 0, kMaxBufferedRequests);
    output_cb_ = evbuffer_add_cb(output(), on_output, this);
    event_base* base = server_.base_;
    deadline_.reset(evtimer_new(base, on_deadline, this));
    reply_timer_.reset(evtimer_new(base, on_reply_timer, this));
    resume_.reset(event_new(base, -1, 0, on_resume, this));
    const timeval tv = to_timeval(server_.limits_.access.handshake_timeout);
    evtimer_add(deadline_.get(), &tv);
    bufferevent_enable(bev_, EV_READ | EV_WRITE);
  }

  const ServerSession& session() const { return session_; }

  // A new connection: admitted to its handshake, or told why not and closed.
  void admit() {
    if (auto no = enter_handshake()) reject(0, *no);
  }
  ~Client() {
    leave_slot();
    evbuffer_remove_cb_entry(output(), output_cb_);
    bufferevent_free(bev_);
  }

  TcpTableServer::Queue queue() const {
    return {answers_.size(), evbuffer_get_length(bufferevent_get_output(bev_))};
  }

 private:
  // Bytes of requests buffered unparsed: a frame is at most 80.
  static constexpr size_t kMaxBufferedRequests = 64u << 10;
  static_assert(kMaxBufferedRequests >= control::kFrameHeaderSize + control::kMaxRequestBody);

  enum class Slot { kNone, kHandshake, kAuthenticated };
  struct Answer {
    uint64_t end;  // where it ends in the output stream (added_)
    Clock::time_point queued_at;
  };

  static void on_read(bufferevent*, void* arg) { static_cast<Client*>(arg)->handle_input(); }
  static void on_write(bufferevent*, void* arg) {
    auto* c = static_cast<Client*>(arg);
    if (c->closing_) c->server_.drop(c);
  }
  static void on_event(bufferevent* bev, short what, void* arg) {
    auto* c = static_cast<Client*>(arg);
    if (what & BEV_EVENT_TIMEOUT) return c->timed_out();
    if ((what & BEV_EVENT_ERROR) && c->server_.limits_.tls) c->log_tls_failure(bev);
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) c->server_.drop(c);
  }
  // " (TLSv1.3 ...; kernel TLS send)" over --tls, else nothing.
  std::string tls_note() const {
    SSL* ssl = bufferevent_openssl_get_ssl(bev_);
    return ssl == nullptr ? "" : " (" + tls_session_summary(ssl) + ")";
  }
  // Why a TLS connection failed (a certificate refused, a plain client),
  // for the operator: the client only sees the connection end.
  void log_tls_failure(bufferevent* bev) const {
    std::string why;
    while (const unsigned long e = bufferevent_get_openssl_error(bev)) {
      char text[256];
      ERR_error_string_n(e, text, sizeof text);
      why += (why.empty() ? "" : "; ") + std::string(text);
    }
    if (why.empty()) return;
    log::warn_limited("tls refused", "TLS with client " + peer_ + " failed: " + why +
                                         (session_.ready() ? "" : " (before its handshake)"));
  }
  static void on_resume(evutil_socket_t, short, void* arg) {
    static_cast<Client*>(arg)->handle_input();
  }
  // The kernel took output bytes: answers wholly sent leave the queue.
  static void on_output(evbuffer*, const evbuffer_cb_info* info, void* arg) {
    auto* c = static_cast<Client*>(arg);
    c->taken_ += info->n_deleted;
    const size_t before = c->answers_.size();
    while (!c->answers_.empty() && c->answers_.front().end <= c->taken_) c->answers_.pop_front();
    if (c->answers_.size() < before && c->stalled_ && !c->closing_) {
      c->stalled_ = false;
      event_active(c->resume_.get(), EV_TIMEOUT, 0);  // not from inside libevent's write
    }
  }
  // The handshake's deadline: whoever has not authenticated by now is told, and dropped.
  static void on_deadline(evutil_socket_t, short, void* arg) {
    auto* c = static_cast<Client*>(arg);
    if (c->closing_) return c->server_.drop(c);
    if (!c->session_.ready()) c->reject(0, c->session_.timed_out());
  }
  static void on_reply_timer(evutil_socket_t, short, void* arg) {
    static_cast<Client*>(arg)->check_replies_taken();
  }

  // A handshake slot, within the budgets of connections that have not
  // authenticated (in all, and from this address).
  std::optional<Refusal> enter_handshake() {
    auto& by_host = server_.pending_by_host_;
    auto it = by_host.find(host_);
    if (auto no = ServerSession::admit_unauthenticated(
            server_.pending_, it == by_host.end() ? 0 : it->second, server_.limits_.access))
      return no;
    ++server_.pending_;
    ++by_host[host_];
    serving_metrics().tcp_handshaking.add(1);
    slot_ = Slot::kHandshake;
    return std::nullopt;
  }
  // Authenticated (or, without a secret, said HELLO): now it takes a slot of
  // max_clients, if one is free; else it is told "server full" (retryable).
  bool take_slot(uint32_t request_id) {
    leave_slot();
    if (auto full = ServerSession::admit(server_.authenticated_, server_.limits_.access)) {
      reject(request_id, *full);
      return false;
    }
    ++server_.authenticated_;
    serving_metrics().tcp_authenticated.add(1);
    slot_ = Slot::kAuthenticated;
    evtimer_del(deadline_.get());
    set_read_timeout(server_.limits_.access.idle_timeout);
    return true;
  }
  void leave_slot() {
    if (slot_ == Slot::kHandshake) {
      --server_.pending_;
      auto it = server_.pending_by_host_.find(host_);
      if (--it->second == 0) server_.pending_by_host_.erase(it);
      serving_metrics().tcp_handshaking.add(-1);
    } else if (slot_ == Slot::kAuthenticated) {
      --server_.authenticated_;
      serving_metrics().tcp_authenticated.add(-1);
    }
    slot_ = Slot::kNone;
  }

  // No request for the idle timeout (the handshake has its deadline instead):
  // told, and dropped.
  void timed_out() {
    if (closing_) return server_.drop(this);
    reject(0, session_.timed_out());
  }

  // The oldest answer still queued must have been taken within reply_timeout.
  void check_replies_taken() {
    if (answers_.empty()) return;
    const auto limit = server_.limits_.reply_timeout;
    const auto waited = Clock::now() - answers_.front().queued_at;
    if (waited < limit) return arm_reply_timer();
    log::warn_limited(
        "client stopped reading",
        "client " + peer_ + " has not taken an answer for " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(limit).count()) +
            " ms (it stopped reading); disconnecting it");
    server_.drop(this);
  }
  void arm_reply_timer() {
    if (answers_.empty() || evtimer_pending(reply_timer_.get(), nullptr)) return;
    const auto due = answers_.front().queued_at + server_.limits_.reply_timeout - Clock::now();
    const timeval tv = to_timeval(
        std::max(std::chrono::duration_cast<std::chrono::microseconds>(due),
                 std::chrono::microseconds(0)) +
        std::chrono::milliseconds(1));
    evtimer_add(reply_timer_.get(), &tv);
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

  // Parses as many complete frames as are buffered, while the client's
  // queue of answers has room (must_wait).
  void handle_input() {
    evbuffer* in = bufferevent_get_input(bev_);
    while (!closing_) {
      std::byte raw[control::kFrameHeaderSize + control::kMaxRequestBody];
      const ev_ssize_t got = evbuffer_copyout(in, raw, sizeof raw);
      if (got < static_cast<ev_ssize_t>(control::kFrameHeaderSize)) return;
      auto h = control::decode_frame_header(std::span(raw, control::kFrameHeaderSize),
                                            control::kMaxRequestBody);
      if (!h.ok()) return reject(0, {ErrorCode::kBadMessage, h.status().reason()});
      const size_t frame = control::kFrameHeaderSize + h->body_len;
      if (static_cast<size_t>(got) < frame) return;
      const std::span<const std::byte> body(raw + control::kFrameHeaderSize, h->body_len);
      if (must_wait(*h, body)) {
        stalled_ = true;  // on_output resumes us
        return;
      }
      evbuffer_drain(in, frame);
      handle_frame(*h, body);
    }
  }

  // The announced depth, enforced: while max_in_flight answers are queued,
  // or the next READ's would take the queue past max_queued_bytes, the
  // request waits.
  bool must_wait(const control::FrameHeader& h, std::span<const std::byte> body) {
    if (answers_.empty()) return false;
    if (answers_.size() >= server_.limits_.max_in_flight) return true;
    if (h.type != MsgType::kRead) return false;
    auto r = control::decode_read(body);
    const size_t next = r.ok() ? r->length : 0;
    return evbuffer_get_length(output()) + next > server_.limits_.max_queued_bytes;
  }

  // The session decides; this only moves its answers into the output buffer.
  void handle_frame(const control::FrameHeader& h, std::span<const std::byte> body) {
    const uint32_t id = h.request_id;
    switch (h.type) {
      case MsgType::kHello: {
        auto ok = session_.on_hello(body);
        if (!ok.ok()) return reject(id, ok.refusal());
        if (session_.ready() && !take_slot(id)) return;
        return send_frame([&](std::string& o) { control::append_hello_ok(o, id, *ok); });
      }
      case MsgType::kAuth: {
        auto proof = session_.on_auth(body);
        if (!proof.ok()) return reject(id, proof.refusal());
        if (!take_slot(id)) return;
        log::info_limited("client authenticated",
                          "client " + peer_ + " authenticated" + tls_note());
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

  // Table bytes are sent by reference (a record never changes once
  // written); change log bytes and a streamed table's header page are
  // copied now (being rewritten; the client checks the copy by the seqlock
  // rule or the header's CRC). "epoch gone" leaves the connection open.
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
    std::string header;
    control::append_read_data_header(header, request_id, static_cast<uint32_t>(bytes.size()));
    evbuffer_add(output(), header.data(), header.size());
    if (answer->changing)
      evbuffer_add(output(), bytes.data(), bytes.size());
    else
      evbuffer_add_reference(output(), bytes.data(), bytes.size(), release_table_ref,
                             new TablePtr(server_.table_));
    queued(header.size() + bytes.size());
    serving_metrics().tcp_reads.add();
    serving_metrics().tcp_bytes.add(bytes.size());
  }

  template <typename Fn>
  void send_frame(Fn&& build) {
    std::string o;
    build(o);
    evbuffer_add(output(), o.data(), o.size());
    queued(o.size());
  }

  // One answer of `bytes` was added to the output.
  void queued(size_t bytes) {
    added_ += bytes;
    answers_.push_back({added_, Clock::now()});
    arm_reply_timer();
  }

  // Answers with an error and closes once it is flushed: a peer that sends
  // garbage gets told why, and nothing more. Rate-limited: any peer can
  // cause one per connection.
  void reject(uint32_t request_id, const Refusal& r) {
    ServingMetrics::refused(ServingTransport::kTcp, r.code);
    log::warn_limited("client refused", "client " + peer_ + ": " +
                                            control::error_code_name(r.code) + ": " + r.why +
                                            "; disconnecting it");
    send_frame([&](std::string& o) { control::append_error(o, request_id, {r.code, r.why}); });
    closing_ = true;
    bufferevent_disable(bev_, EV_READ);
    bufferevent_setwatermark(bev_, EV_WRITE, 0, 0);
    // A peer that never reads the ERROR does not keep its connection either.
    const timeval tv = to_timeval(server_.limits_.access.handshake_timeout);
    bufferevent_set_timeouts(bev_, nullptr, &tv);
    // One still in its TLS handshake cannot be sent it at all: it goes at
    // once (on_deadline drops a closing client).
    SSL* ssl = bufferevent_openssl_get_ssl(bev_);
    if (ssl != nullptr && SSL_is_init_finished(ssl) == 0) {
      const timeval now{0, 0};
      evtimer_add(deadline_.get(), &now);
    }
  }

  using EventPtr = std::unique_ptr<event, void (*)(event*)>;
  TcpTableServer& server_;
  bufferevent* bev_;
  std::string peer_, host_;  // "host:port" for logs; the host for per-address budgets
  ServerSession session_{server_.terms_};
  Slot slot_ = Slot::kNone;
  bool closing_ = false;
  bool stalled_ = false;  // a request waits for the queue to drain
  // Output bytes ever queued, and ever taken by the kernel; the answers not
  // wholly taken yet, oldest first.
  uint64_t added_ = 0, taken_ = 0;
  std::deque<Answer> answers_;
  evbuffer_cb_entry* output_cb_ = nullptr;
  EventPtr deadline_{nullptr, event_free}, reply_timer_{nullptr, event_free},
      resume_{nullptr, event_free};
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
  constexpr int kOptions = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
  bufferevent* bev = nullptr;
  if (const auto& tls = self->limits_.tls) {
    // The bufferevent owns the SSL (and frees it) from here on.
    SSL* ssl = SSL_new(tls->get());
    if (ssl != nullptr) {
      // libevent moves on to its next chunk after any SSL_write that
      // returned, so one must write all it was given or nothing.
      SSL_clear_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE);
      bev = bufferevent_openssl_socket_new(self->base_, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                           kOptions);
      // Clients close without a close_notify once they have their table.
      if (bev != nullptr) bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    }
  } else {
    bev = bufferevent_socket_new(self->base_, fd, kOptions);
  }
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  auto* c = new Client(*self, bev, peer_name(addr), peer_host(fd));
  self->clients_.insert(c);
  c->admit();
}

size_t TcpTableServer::table_readers(uint64_t epoch) const {
  size_t n = 0;
  for (const Client* c : clients_) n += c->session().holds_table(epoch) ? 1 : 0;
  return n;
}

std::vector<TcpTableServer::Queue> TcpTableServer::queues_for_test() const {
  std::vector<Queue> out;
  for (const Client* c : clients_) out.push_back(c->queue());
  return out;
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
