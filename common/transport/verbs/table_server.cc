// VerbsTableServer, connection management: listening, the CM events
// (connect requests, establishment, disconnects, device removal), and the
// epochs served. Clients' messages and the sweeps are in
// table_server_messages.cc; who may read what is verbs/protection.h.
#include "common/transport/verbs/table_server.h"

#include <fcntl.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include "common/base/log.h"
#include "common/transport/serving_metrics.h"
#include "common/transport/verbs/device.h"

namespace rrs {

using control::ErrorCode;

namespace {

std::string peer_of(const rdma_cm_id* id) {
  const sockaddr* a = rdma_get_peer_addr(const_cast<rdma_cm_id*>(id));
  char host[NI_MAXHOST] = "?";
  getnameinfo(a, a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in), host,
              sizeof host, nullptr, 0, NI_NUMERICHOST);
  return host;
}

std::span<const std::byte> private_data(const rdma_conn_param& p) {
  return {static_cast<const std::byte*>(p.private_data), p.private_data_len};
}

}  // namespace

Result<std::unique_ptr<VerbsTableServer>> VerbsTableServer::listen(
    event_base* base, const Endpoint& at, const VerbsServerLimits& limits) {
  if (auto device = rdma_device_active(); !device.ok())
    return Status::error("listen for RDMA on " + at.to_string(),
                         device.status().reason() + " (use --transport tcp)")
        .as(ErrorKind::kUnavailable);
  std::unique_ptr<VerbsTableServer> s(new VerbsTableServer(base, limits));
  RRS_RETURN_IF_ERROR(s->start_listening(at));
  // An address of one device: say now how its clients are protected (on a
  // wildcard address, at the first client).
  if (s->listen_id_->verbs) s->registry_.protection_for(s->listen_id_->verbs);

  int fd = s->channel_->fd;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  s->cm_event_.reset(event_new(base, fd, EV_READ | EV_PERSIST, on_cm_readable, s.get()));
  event_add(s->cm_event_.get(), nullptr);
  s->retire_timer_.reset(evtimer_new(base, on_retire_timer, s.get()));
  s->keepalive_timer_.reset(event_new(base, -1, EV_PERSIST, on_keepalive_timer, s.get()));
  s->handshake_timer_.reset(evtimer_new(base, on_handshake_timer, s.get()));
  s->grow_timer_.reset(event_new(base, -1, EV_PERSIST, on_grow_timer, s.get()));
  const timeval every = to_timeval(limits.keepalive_interval);
  event_add(s->keepalive_timer_.get(), &every);
  return s;
}

Status VerbsTableServer::start_listening(const Endpoint& at) {
  const std::string step = "listen for RDMA on " + at.to_string();
  channel_.reset(rdma_create_event_channel());
  if (!channel_) return Status::from_errno(step + ": rdma_create_event_channel");
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    return Status::from_errno(step + ": rdma_create_id");
  listen_id_.reset(id);

  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(at.port);
  if (int rc = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::error(step, std::string("cannot resolve address: ") + gai_strerror(rc));
  int rc = rdma_bind_addr(id, res->ai_addr);
  int err = errno;
  freeaddrinfo(res);
  if (rc != 0)
    return Status::from_errno(step + ": rdma_bind_addr", err)
        .wrap(err == EADDRNOTAVAIL ? "is this an address of an RDMA interface?" : "bind");
  if (rdma_listen(id, verbs::kListenBacklog) != 0)
    return Status::from_errno(step + ": rdma_listen");
  bound_ = {at.host, ntohs(rdma_get_src_port(id))};
  return {};
}

VerbsTableServer::~VerbsTableServer() {
  // A registration under way finishes and is released with those not taken
  // yet; nothing runs off the loop after this.
  worker_.reset();
  // Connections (QP, CQ, cm_id) go before the registrations and PDs they use.
  cm_event_.reset();
  retire_timer_.reset();
  keepalive_timer_.reset();
  handshake_timer_.reset();
  grow_timer_.reset();
  connections_.clear();
  early_drops_.clear();
  registry_.clear();
}

Status VerbsTableServer::publish(TablePtr table) {
  // A streamed epoch again, now complete: its registration grows to the end.
  if (table == current_) {
    const timeval every = to_timeval(verbs::kGrowPoll);
    event_add(grow_timer_.get(), &every);
    grow_streamed();
    return {};
  }
  if (listen_id_->verbs)
    if (auto no = refuse_streamed(listen_id_->verbs, *table))
      return Status::error("publish over verbs", no->why);
  RRS_RETURN_IF_ERROR(check_memlock(table->complete()
                                        ? table->length()
                                        : verbs::prefix_to_register(*table, 0, limits_.grow_step)));
  if (current_ && !current_->complete()) withdraw_streamed(table->epoch());
  registry_.retire_current(Clock::now());
  current_ = std::move(table);
  // Register now where the device is known, so the first client does not pay for it.
  if (listen_id_->verbs) {
    auto r = registry_.registration_for(listen_id_->verbs, current_);
    if (!r.ok()) return r.status();
  }
  if (!current_->complete()) {
    const timeval every = to_timeval(verbs::kGrowPoll);
    event_add(grow_timer_.get(), &every);
  }
  prune_retired();
  return {};
}

void VerbsTableServer::on_cm_readable(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<VerbsTableServer*>(arg);
  for (;;) {
    rdma_cm_event* raw = nullptr;
    if (rdma_get_cm_event(self->channel_.get(), &raw) != 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        log::error("rdma_get_cm_event: " + std::string(std::strerror(errno)));
      return;
    }
    // Copy what we need and ack at once: rdma_destroy_id waits for every
    // event of its id to be acked.
    rdma_cm_event ev = *raw;
    std::string data(static_cast<const char*>(raw->param.conn.private_data),
                     raw->param.conn.private_data ? raw->param.conn.private_data_len : 0);
    ev.param.conn.private_data = data.data();
    ev.param.conn.private_data_len = static_cast<uint8_t>(data.size());
    rdma_ack_cm_event(raw);
    self->handle(ev);
  }
}

void VerbsTableServer::handle(rdma_cm_event& ev) {
  switch (ev.event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST: return on_connect_request(ev.id, ev.param.conn);
    case RDMA_CM_EVENT_ESTABLISHED:
      if (auto it = connections_.find(ev.id); it != connections_.end()) {
        it->second->established = true;
        log::info_limited("verbs client connected", "verbs client " + it->second->peer +
                                                        " connected (epoch " +
                                                        std::to_string(it->second->epoch) + ")");
      } else if (early_drops_.count(ev.id)) {
        rdma_disconnect(ev.id);
        early_drops_.erase(ev.id);
      }
      return;
    case RDMA_CM_EVENT_DISCONNECTED: return drop(ev.id, "disconnected");
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE: return drop(ev.id, rdma_event_str(ev.event));
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      log::error("RDMA device removed: dropping its clients; restart rdma-server to serve over "
                 "verbs again");
      if (ev.id == listen_id_.get()) {
        connections_.clear();
        early_drops_.clear();
        registry_.clear();
        cm_event_.reset();
      } else {
        drop(ev.id, "device removed");
      }
      return;
    case RDMA_CM_EVENT_ADDR_CHANGE:
      log::warn("the RDMA interface's address changed; clients may need to reconnect");
      return;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return;
    default: log::warn(std::string("unexpected RDMA CM event ") + rdma_event_str(ev.event)); return;
  }
}

void VerbsTableServer::reject(rdma_cm_id* id, const Refusal& r) {
  ServingMetrics::refused(ServingTransport::kVerbs, r.code);
  log::warn_limited("verbs client refused", "verbs client " + peer_of(id) + ": " +
                                                control::error_code_name(r.code) + ": " + r.why +
                                                "; rejecting it");
  std::string data = control::encode_reject({r.code, r.why});
  rdma_reject(id, data.data(), static_cast<uint8_t>(data.size()));
  rdma_destroy_id(id);
}

void VerbsTableServer::on_connect_request(rdma_cm_id* id, const rdma_conn_param& param) {
  auto c = std::make_unique<Connection>(terms_);
  auto hello = c->session.on_connect(private_data(param));
  if (!hello.ok()) return reject(id, hello.refusal());
  if (auto no = admit(*c, peer_of(id))) return reject(id, *no);
  if (auto d = c->session.offer(current_, control::TransportKind::kVerbs); !d.ok())
    return reject(id, d.refusal());
  if (c->session.holds_table(current_->epoch()))
    if (auto no = refuse_streamed(id->verbs, *current_)) return reject(id, *no);
  auto reg = registry_.registration_for(id->verbs, current_);
  if (!reg.ok()) return reject(id, {ErrorCode::kInternal, reg.status().message()});
  if (auto no = check_pinning(**reg)) return reject(id, *no);
  auto pd = pd_for_client(*c, **reg);
  if (!pd.ok()) return reject(id, {ErrorCode::kInternal, pd.status().message()});

  c->id.reset(id);
  c->serial = ++last_serial_;
  c->peer = peer_of(id);
  c->epoch = current_->epoch();
  c->last_heard = c->connected_at = Clock::now();
  if (!c->prepare(*pd)) return drop_new(std::move(c), "set up its queue pair");
  if (!accept(*c, **reg, *hello, param)) return drop_new(std::move(c), "rdma_accept");
  connections_.emplace(id, std::move(c));
  serving_metrics().verbs_connected.set(static_cast<double>(connections_.size()));
  arm_handshake_timer();
}

// Without a secret the CONNECT_REQUEST's HELLO is all a client says: it takes
// a slot of max_clients now. With one, it is admitted to its handshake within
// the budgets of connections that have not proved the secret (in all, and
// per address), and takes a slot only once its AUTH is checked
// (answer_auth): peers without the secret never crowd out clients with it.
std::optional<Refusal> VerbsTableServer::admit(const Connection& c, const std::string& host) const {
  size_t authenticated = 0, pending = 0, from_host = 0;
  for (const auto& [id, other] : connections_) {
    if (other->session.ready()) {
      ++authenticated;
    } else {
      ++pending;
      if (other->peer == host) ++from_host;
    }
  }
  if (c.session.ready()) return ServerSession::admit(authenticated, limits_.access);
  return ServerSession::admit_unauthenticated(pending, from_host, limits_.access);
}

void VerbsTableServer::disconnect_all() {
  for (auto& [id, c] : connections_) rdma_disconnect(id);
  connections_.clear();
  prune_retired();
}

void VerbsTableServer::drop_new(std::unique_ptr<Connection> c, const char* step) {
  // A peer can make these happen at will (connect, then vanish): limited.
  log::warn_limited("verbs client setup failed",
                    "verbs client " + c->peer + ": " + step + ": " + std::strerror(errno));
  rdma_reject(c->id.get(), nullptr, 0);
}

void VerbsTableServer::hang_up(rdma_cm_id* id, const char* reason) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (it->second->established || early_drops_.size() >= verbs::kMaxEarlyDrops) {
    rdma_disconnect(id);
    return drop(id, reason);
  }
  verbs::CmId keep = std::move(it->second->id);  // its QP, CQ and buffers go now
  drop(id, reason);
  early_drops_.emplace(id, std::move(keep));
}

void VerbsTableServer::drop(rdma_cm_id* id, const char* reason) {
  early_drops_.erase(id);  // an error instead of ESTABLISHED: the id may go
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  log::info_limited("verbs client gone", "verbs client " + it->second->peer + " " + reason);
  connections_.erase(it);
  prune_retired();
}

void VerbsTableServer::on_retire_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->prune_retired();
}

// A replaced epoch stays registered while a client that was given its table
// is still connected, or until the grace period ends. After that its READs
// fail with a remote access error, which the client reports as "epoch gone".
// A log-only client (a follower) does not keep it: it reconnects at once and
// finds its log in the newer epoch, and the old table's pages go (a table
// given back, --table-retain, is freed then, not a grace period later).
// The timer is re-armed for the next deadline: libevent measures from its
// cached loop time, so one timer set at publish can fire a little early.
void VerbsTableServer::prune_retired() {
  const auto now = Clock::now();
  auto in_use = [&](const verbs::Registration& r) {
    for (const auto& [id, c] : connections_)
      if (c->epoch == r.table->epoch() && !c->session.log_only()) return true;
    return false;
  };
  // Its clients' grants go first (windows before the MR they are bound
  // to; MRs of their own before the table they pin); their READs fail.
  auto release = [&](const verbs::Registration& r) {
    for (auto& [id, c] : connections_)
      if (c->epoch == r.table->epoch() && c->id->verbs == r.device) c->grant.reset();
  };
  auto next = registry_.prune(now, limits_.retire_grace, in_use, release);
  // Called whenever a connection goes (drop, disconnect_all) or an epoch does.
  serving_metrics().verbs_connected.set(static_cast<double>(connections_.size()));
  serving_metrics().verbs_registrations.set(static_cast<double>(registry_.registrations()));
  if (!next) return;
  const timeval tv = to_timeval(std::chrono::duration_cast<std::chrono::microseconds>(*next - now) +
                                std::chrono::milliseconds(10));
  evtimer_add(retire_timer_.get(), &tv);
}

}  // namespace rrs
