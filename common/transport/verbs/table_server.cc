#include "common/transport/verbs/table_server.h"

#include <fcntl.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/base/log.h"
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

bool has_type2_windows(ibv_context* device) {
  ibv_device_attr attr{};
  return ibv_query_device(device, &attr) == 0 &&
         (attr.device_cap_flags &
          (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
}

// An epoch's table and its change log (if any), registered in one PD.
struct EpochMrs {
  verbs::MemoryRegion table, log;
};

Result<EpochMrs> register_epoch(ibv_pd* pd, const Table& t, int access, const std::string& where) {
  EpochMrs mrs;
  mrs.table.reset(
      ibv_reg_mr(pd, const_cast<std::byte*>(t.bytes.data()), t.bytes.size(), access));
  if (!mrs.table)
    return Status::from_errno("register the " + std::to_string(t.bytes.size() >> 20) +
                              " MiB table " + where);
  if (const ChangeLogPtr& log = t.log) {
    // The sidecar writes the log with the CPU; peers may only read it.
    mrs.log.reset(ibv_reg_mr(pd, const_cast<std::byte*>(log->memory().data()),
                             log->memory().size(), access));
    if (!mrs.log)
      return Status::from_errno("register the " + std::to_string(log->memory().size() >> 20) +
                                " MiB change log " + where);
  }
  return mrs;
}

}  // namespace

Result<std::unique_ptr<VerbsTableServer>> VerbsTableServer::listen(event_base* base,
                                                                   const Endpoint& at,
                                                                   VerbsServerLimits limits) {
  const std::string step = "listen for RDMA on " + at.to_string();
  std::string why;
  if (!rdma_device_active(why))
    return Status::error(step, why + " (use --transport tcp)").as(ErrorKind::kUnavailable);
  std::unique_ptr<VerbsTableServer> s(new VerbsTableServer(base, limits));
  s->channel_.reset(rdma_create_event_channel());
  if (!s->channel_) return Status::from_errno(step + ": rdma_create_event_channel");
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(s->channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    return Status::from_errno(step + ": rdma_create_id");
  s->listen_id_.reset(id);

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
  if (rdma_listen(id, 64) != 0) return Status::from_errno(step + ": rdma_listen");
  s->bound_ = {at.host, ntohs(rdma_get_src_port(id))};
  // An address of one device: say now how its clients are protected (on a
  // wildcard address, at the first client).
  if (id->verbs) s->protection_for(id->verbs);

  int fd = s->channel_->fd;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  s->cm_event_.reset(event_new(base, fd, EV_READ | EV_PERSIST, on_cm_readable, s.get()));
  event_add(s->cm_event_.get(), nullptr);
  s->retire_timer_.reset(evtimer_new(base, on_retire_timer, s.get()));
  s->keepalive_timer_.reset(
      event_new(base, -1, EV_PERSIST, on_keepalive_timer, s.get()));
  s->handshake_timer_.reset(evtimer_new(base, on_handshake_timer, s.get()));
  const timeval every = to_timeval(limits.keepalive_interval);
  event_add(s->keepalive_timer_.get(), &every);
  return s;
}

VerbsTableServer::~VerbsTableServer() {
  // Connections (QP, CQ, cm_id) go before the registrations and PDs they use.
  cm_event_.reset();
  retire_timer_.reset();
  keepalive_timer_.reset();
  handshake_timer_.reset();
  connections_.clear();
  early_drops_.clear();
  registrations_.clear();
}

Status VerbsTableServer::publish(TablePtr table) {
  RRS_RETURN_IF_ERROR(check_memlock(table->bytes.size()));
  for (Registration& r : registrations_)
    if (r.retired_at == Clock::time_point{}) r.retired_at = Clock::now();
  current_ = std::move(table);
  // Register now where the device is known, so the first client does not pay for it.
  if (listen_id_->verbs) {
    auto r = registration_for(listen_id_->verbs);
    if (!r.ok()) return r.status();
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
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      return on_connect_request(ev.id, ev.param.conn);
    case RDMA_CM_EVENT_ESTABLISHED:
      if (auto it = connections_.find(ev.id); it != connections_.end()) {
        it->second->established = true;
        log::info("verbs client " + it->second->peer + " connected (epoch " +
                  std::to_string(it->second->epoch) + ")");
      } else if (early_drops_.count(ev.id)) {
        rdma_disconnect(ev.id);
        early_drops_.erase(ev.id);
      }
      return;
    case RDMA_CM_EVENT_DISCONNECTED:
      return drop(ev.id, "disconnected");
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
      return drop(ev.id, rdma_event_str(ev.event));
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      log::error("RDMA device removed: dropping its clients; restart rdma-server to serve over "
                 "verbs again");
      if (ev.id == listen_id_.get()) {
        connections_.clear();
        early_drops_.clear();
        registrations_.clear();
        pds_.clear();
        protection_.clear();
        cm_event_.reset();
      } else {
        drop(ev.id, "device removed");
      }
      return;
    case RDMA_CM_EVENT_ADDR_CHANGE:
      log::warn("the RDMA interface's address changed; clients may need to reconnect");
      return;
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
      return;
    default:
      log::warn(std::string("unexpected RDMA CM event ") + rdma_event_str(ev.event));
      return;
  }
}

void VerbsTableServer::reject(rdma_cm_id* id, const Refusal& r) {
  log::warn("verbs client " + peer_of(id) + ": " + control::error_code_name(r.code) + ": " + r.why +
            "; rejecting it");
  std::string data = control::encode_reject({r.code, r.why});
  rdma_reject(id, data.data(), static_cast<uint8_t>(data.size()));
  rdma_destroy_id(id);
}

void VerbsTableServer::on_connect_request(rdma_cm_id* id, const rdma_conn_param& param) {
  auto c = std::make_unique<Connection>(terms_);
  auto hello = c->session.on_connect(private_data(param));
  if (!hello.ok()) return reject(id, hello.refusal());
  if (auto full = ServerSession::admit(connections_.size(), limits_.access)) return reject(id, *full);
  if (auto d = ServerSession::describe(current_, control::TransportKind::kVerbs); !d.ok())
    return reject(id, d.refusal());
  auto reg = registration_for(id->verbs);
  if (!reg.ok()) return reject(id, {ErrorCode::kInternal, reg.status().message()});
  ibv_pd* pd = nullptr;
  if ((*reg)->protection == Protection::kPdPerClient) {
    c->own_pd.reset(ibv_alloc_pd(id->verbs));
    if (!c->own_pd)
      return reject(id, {ErrorCode::kInternal, std::string("ibv_alloc_pd: ") + std::strerror(errno)});
    pd = c->own_pd.get();
  } else {
    auto shared = pd_for(id->verbs);
    if (!shared.ok()) return reject(id, {ErrorCode::kInternal, shared.status().message()});
    pd = *shared;
  }

  c->server = this;
  c->id.reset(id);
  c->peer = peer_of(id);
  c->epoch = current_->epoch();
  c->last_heard = c->connected_at = Clock::now();
  if (!prepare(*c, pd)) return drop_new(std::move(c), "set up its queue pair");

  ibv_device_attr dev{};
  ibv_query_device(id->verbs, &dev);
  control::Accept accept;
  accept.hello = *hello;
  // With a secret, the rkey goes out only after AUTH (answer_auth).
  if (c->session.ready()) accept.descriptor = descriptor_for(**reg);
  std::string data = control::encode_accept(accept);
  rdma_conn_param cp{};
  cp.private_data = data.data();
  cp.private_data_len = static_cast<uint8_t>(data.size());
  // We answer READs (responder); we never issue them. In a CONNECT_REQUEST,
  // responder_resources is what the peer asks of us (its initiator depth).
  // Never more than the READs we allow in flight: rdma_cm sets the client's
  // QP to what we grant here, so its hardware holds it to our limit.
  cp.responder_resources = static_cast<uint8_t>(
      std::min({static_cast<uint32_t>(param.responder_resources),
                static_cast<uint32_t>(std::max(dev.max_qp_rd_atom, 0)), limits_.max_in_flight}));
  cp.initiator_depth = 0;
  if (rdma_accept(id, &cp) != 0) return drop_new(std::move(c), "rdma_accept");
  connections_.emplace(id, std::move(c));
  arm_handshake_timer();
}

// The rkeys are the epoch's own under kSharedMr; otherwise grant_access()
// fills in the client's.
control::Descriptor VerbsTableServer::descriptor_for(const Registration& r) const {
  const bool shared = r.protection == Protection::kSharedMr;
  control::Descriptor d = *ServerSession::describe(r.table, control::TransportKind::kVerbs);
  d.remote_addr = reinterpret_cast<uint64_t>(r.table->bytes.data());
  d.rkey = shared ? r.mr->rkey : 0;
  if (const ChangeLogPtr& log = r.table->log) {
    d.log_addr = reinterpret_cast<uint64_t>(log->memory().data());
    d.log_rkey = shared ? r.log_mr->rkey : 0;
  }
  return d;
}

// The server posts only keepalive answers: a small CQ with no completion
// channel (sweep() polls it), RECVs posted before the accept so the client's
// first keepalive always finds one.
bool VerbsTableServer::prepare(Connection& c, ibv_pd* pd) {
  c.cq = verbs::CompletionQueue(
      ibv_create_cq(c.id->verbs, kRecvSlots + kSendSlots, nullptr, nullptr, 0));
  if (!c.cq.get()) return false;
  c.msgs_mr.reset(ibv_reg_mr(pd, c.msgs.data(), c.msgs.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!c.msgs_mr) return false;
  ibv_qp_init_attr qpa{};
  qpa.send_cq = qpa.recv_cq = c.cq.get();
  qpa.qp_type = IBV_QPT_RC;
  qpa.cap = {kSendSlots, kRecvSlots, 1, 1, 0};
  if (rdma_create_qp(c.id.get(), pd, &qpa) != 0) return false;
  c.qp = verbs::QueuePair(c.id.get());
  for (uint32_t slot = 0; slot < kRecvSlots; ++slot)
    if (!post_recv(c, slot)) return false;
  return true;
}

bool VerbsTableServer::post_recv(Connection& c, uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uint64_t>(c.msgs.data() + slot * kMsgSlot), kMsgSlot,
              c.msgs_mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(c.qp.get(), &wr, &bad) == 0;
}

std::string VerbsTableServer::take_completions(Connection& c) {
  ibv_wc wc[8];
  int n;
  while ((n = ibv_poll_cq(c.cq.get(), 8, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      // A malformed or oversized message, or a peer gone, ends the connection.
      if (wc[i].status != IBV_WC_SUCCESS)
        return std::string("completion error: ") + ibv_wc_status_str(wc[i].status);
      if (wc[i].wr_id >= kRecvSlots) {
        --c.sends_in_flight;
        continue;
      }
      const auto slot = static_cast<uint32_t>(wc[i].wr_id);
      auto message = c.session.on_message(std::span<const std::byte>(
          c.msgs.data() + slot * kMsgSlot, std::min<size_t>(wc[i].byte_len, kMsgSlot)));
      if (!message.ok() && !message.refusal().tell) return message.refusal().why;
      if (!post_recv(c, slot)) return "could not post a receive";
      std::string why;
      if (!message.ok())
        close_with(c, message.refusal());
      else if (auto* a = std::get_if<ServerSession::Auth>(&*message))
        why = answer_auth(c, a->server_proof);
      else
        why = answer_keepalive(c, std::get<ServerSession::Keepalive>(*message).seq);
      if (!why.empty()) return why;
    }
  }
  return n < 0 ? "could not poll its CQ" : "";
}

std::string VerbsTableServer::answer_keepalive(Connection& c, uint64_t seq) {
  c.last_heard = Clock::now();
  // A client keeps one keepalive outstanding; one that floods us just misses answers.
  if (c.sends_in_flight == kSendSlots) return "";
  if (!send_message(c, control::encode_keepalive(control::MsgType::kKeepaliveAck, seq)))
    return "could not post a send";
  return "";
}

// The session has checked the client's proof: AUTH_OK with our own proof and
// the descriptor (the rkey's first trip), once the client's access is granted.
std::string VerbsTableServer::answer_auth(Connection& c, const control::Proof& server_proof) {
  if (auto d = ServerSession::describe(current_, control::TransportKind::kVerbs); !d.ok()) {
    close_with(c, c.session.refuse(d.refusal().code, d.refusal().why));
    return "";
  }
  auto reg = registration_for(c.id->verbs);
  if (!reg.ok()) {
    close_with(c, c.session.refuse(ErrorCode::kInternal, reg.status().message()));
    return "";
  }
  c.epoch = current_->epoch();  // a newer epoch may have been published meanwhile
  c.last_heard = Clock::now();
  control::Descriptor d = descriptor_for(**reg);
  if (Status granted = grant_access(c, **reg, d); !granted.ok()) {
    close_with(c, c.session.refuse(ErrorCode::kInternal, granted.message()));
    return "";
  }
  if (!send_message(c, control::encode_auth_granted({server_proof, d})))
    return "could not post a send";
  log::info("verbs client " + c.peer + " authenticated (epoch " + std::to_string(c.epoch) + ")");
  return "";
}

Status VerbsTableServer::grant_access(Connection& c, const Registration& r,
                                      control::Descriptor& d) {
  if (r.protection == Protection::kSharedMr) return {};
  c.grant.emplace();
  c.grant->table = r.table;
  return r.protection == Protection::kWindowPerClient ? bind_windows(c, r, d)
                                                       : register_for_client(c, r, d);
}

Status VerbsTableServer::bind_windows(Connection& c, const Registration& r,
                                      control::Descriptor& d) {
  struct Bind {
    verbs::MemoryWindow& window;
    ibv_mr* mr;
    uint32_t& rkey;
  };
  std::vector<Bind> binds{{c.grant->table_window, r.mr.get(), d.rkey}};
  if (r.log_mr) binds.push_back({c.grant->log_window, r.log_mr.get(), d.log_rkey});
  for (Bind& b : binds) {
    b.window.reset(ibv_alloc_mw(c.qp.get()->pd, IBV_MW_TYPE_2));
    if (!b.window) return Status::from_errno("allocate a memory window");
    ibv_send_wr wr{};
    wr.wr_id = kRecvSlots;  // a send, for the completion count
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = b.window.get();
    wr.bind_mw.rkey = ibv_inc_rkey(b.window->rkey);
    wr.bind_mw.bind_info.mr = b.mr;
    wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(b.mr->addr);
    wr.bind_mw.bind_info.length = b.mr->length;
    wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(c.qp.get(), &wr, &bad); rc != 0)
      return Status::from_errno("bind a memory window", rc);
    ++c.sends_in_flight;
    b.rkey = wr.bind_mw.rkey;
  }
  return {};
}

// Registers on the event loop, after the client's AUTH: the time it takes
// grows with the table (every page is pinned again), and so does the locked
// memory, once per client on top of the others'. That is the fallback's cost.
Status VerbsTableServer::register_for_client(Connection& c, const Registration& r,
                                             control::Descriptor& d) {
  auto mrs = register_epoch(c.own_pd.get(), *r.table, IBV_ACCESS_REMOTE_READ,
                            "in a client's own protection domain (each client pins it again: "
                            "RLIMIT_MEMLOCK must cover it once per client)");
  if (!mrs.ok()) return mrs.status();
  c.grant->table_mr = std::move(mrs->table);
  c.grant->log_mr = std::move(mrs->log);
  d.rkey = c.grant->table_mr->rkey;
  if (c.grant->log_mr) d.log_rkey = c.grant->log_mr->rkey;
  return {};
}

VerbsTableServer::Protection VerbsTableServer::protection_for(ibv_context* device) {
  if (auto it = protection_.find(device); it != protection_.end()) return it->second;
  const std::string on = std::string("verbs on ") + ibv_get_device_name(device->device) + ": ";
  Protection p = Protection::kSharedMr;
  if (!limits_.access.secret) {
    log::info(on + "no shared secret, so the clients of an epoch share its rkey");
  } else if (!limits_.test_no_memory_windows && has_type2_windows(device)) {
    p = Protection::kWindowPerClient;
    log::info(on + "each client reads through memory windows bound to its own queue pair");
  } else {
    p = Protection::kPdPerClient;
    log::warn(on +
              (limits_.test_no_memory_windows ? "memory windows turned off by a test hook"
                                              : "no type-2 memory windows") +
              ": each client gets a protection domain of its own, and the table and log are "
              "registered again in it for every client (time and locked memory grow with "
              "the table, per client)");
  }
  protection_.emplace(device, p);
  return p;
}

bool VerbsTableServer::send_message(Connection& c, const std::string& msg) {
  if (c.sends_in_flight == kSendSlots || msg.size() > kMsgSlot) return false;
  std::byte* buf = c.msgs.data() + (kRecvSlots + c.next_send_slot) * kMsgSlot;
  c.next_send_slot = (c.next_send_slot + 1) % kSendSlots;
  std::memcpy(buf, msg.data(), msg.size());
  ibv_sge sge{reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(msg.size()), c.msgs_mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = kRecvSlots;  // any id >= kRecvSlots is a send
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(c.qp.get(), &wr, &bad) != 0) return false;
  ++c.sends_in_flight;
  return true;
}

void VerbsTableServer::close_with(Connection& c, const Refusal& r) {
  log::warn("verbs client " + c.peer + ": " + control::error_code_name(r.code) + ": " + r.why +
            "; disconnecting it");
  send_message(c, control::encode_error_message({r.code, r.why}));
  c.closing_since = Clock::now();
  arm_handshake_timer();
}

void VerbsTableServer::on_handshake_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->sweep_handshakes();
}

void VerbsTableServer::arm_handshake_timer() {
  for (const auto& [id, c] : connections_)
    if (!c->session.ready() || c->closing_since) {
      const timeval tv = to_timeval(std::chrono::milliseconds(5));
      evtimer_add(handshake_timer_.get(), &tv);
      return;
    }
}

void VerbsTableServer::sweep_handshakes() {
  const auto now = Clock::now();
  std::vector<std::pair<rdma_cm_id*, std::string>> gone;
  for (auto& [id, c] : connections_) {
    if (c->session.ready() && !c->closing_since) continue;
    std::string why = take_completions(*c);
    if (!why.empty()) {
      gone.emplace_back(id, why + "; dropping it");
    } else if (c->closing_since) {
      if (c->sends_in_flight == 0 || now - *c->closing_since > std::chrono::seconds(1))
        gone.emplace_back(id, "disconnected");
    } else if (!c->session.ready() && now - c->connected_at > limits_.access.handshake_timeout) {
      close_with(*c, c->session.timed_out());
    }
  }
  for (const auto& [id, why] : gone) hang_up(id, why.c_str());
  arm_handshake_timer();
}

void VerbsTableServer::on_keepalive_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->sweep();
}

// One-sided READs are invisible to us, so silence is the only sign of a
// client whose host died or whose process hangs. Answers go out up to one
// interval late, well inside the client's limit of kKeepaliveMisses.
void VerbsTableServer::sweep() {
  const auto limit = limits_.keepalive_interval * control::kKeepaliveMisses;
  const auto now = Clock::now();
  std::vector<std::pair<rdma_cm_id*, std::string>> gone;
  for (auto& [id, c] : connections_) {
    if (!c->session.ready() || c->closing_since) continue;  // sweep_handshakes() has them
    std::string why = take_completions(*c);
    if (why.empty() && now - c->last_heard > limit)
      why = "sent no keepalive for " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(now - c->last_heard).count()) +
            " ms";
    if (!why.empty()) gone.emplace_back(id, why + "; dropping it");
  }
  for (const auto& [id, why] : gone) hang_up(id, why.c_str());
}

void VerbsTableServer::disconnect_all() {
  for (auto& [id, c] : connections_) rdma_disconnect(id);
  connections_.clear();
  prune_retired();
}

void VerbsTableServer::drop_new(std::unique_ptr<Connection> c, const char* step) {
  log::error("verbs client " + c->peer + ": " + step + ": " + std::strerror(errno));
  rdma_reject(c->id.get(), nullptr, 0);
}

void VerbsTableServer::hang_up(rdma_cm_id* id, const char* reason) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (it->second->established || early_drops_.size() >= kMaxEarlyDrops) {
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
  log::info("verbs client " + it->second->peer + " " + reason);
  connections_.erase(it);
  prune_retired();
}

Result<ibv_pd*> VerbsTableServer::pd_for(ibv_context* device) {
  auto& pd = pds_[device];
  if (!pd) {
    pd.reset(ibv_alloc_pd(device));
    if (!pd) return Status::from_errno("ibv_alloc_pd");
  }
  return pd.get();
}

Result<const VerbsTableServer::Registration*> VerbsTableServer::registration_for(
    ibv_context* device) {
  for (const Registration& r : registrations_)
    if (r.table == current_ && r.device == device) return &r;
  Registration r;
  r.table = current_;
  r.device = device;
  r.protection = protection_for(device);
  // Remote read only: no peer can ever write the table. With windows, not
  // even that: only the windows bound for each authenticated client's QP
  // grant it. With a PD per client, nothing to register here: each client's
  // AUTH registers the epoch in its own PD.
  if (r.protection != Protection::kPdPerClient) {
    auto pd = pd_for(device);
    if (!pd.ok()) return pd.status();
    const int access =
        r.protection == Protection::kWindowPerClient ? IBV_ACCESS_MW_BIND : IBV_ACCESS_REMOTE_READ;
    auto mrs = register_epoch(*pd, *current_, access,
                              std::string("with ") + ibv_get_device_name(device->device));
    if (!mrs.ok()) return mrs.status();
    r.mr = std::move(mrs->table);
    r.log_mr = std::move(mrs->log);
  }
  registrations_.push_back(std::move(r));
  return &registrations_.back();
}

void VerbsTableServer::on_retire_timer(evutil_socket_t, short, void* arg) {
  static_cast<VerbsTableServer*>(arg)->prune_retired();
}

// A replaced epoch stays registered while a client that was given it is
// still connected, or until the grace period ends. After that its READs fail
// with a remote access error, which the client reports as "epoch gone".
// The timer is re-armed for the next deadline: libevent measures from its
// cached loop time, so one timer set at publish can fire a little early.
void VerbsTableServer::prune_retired() {
  const auto now = Clock::now();
  std::erase_if(registrations_, [&](const Registration& r) {
    if (r.retired_at == Clock::time_point{}) return false;
    bool in_use = false;
    for (const auto& [id, c] : connections_) in_use |= c->epoch == r.table->epoch();
    if (in_use && now - r.retired_at < limits_.retire_grace) return false;
    // Its clients' grants go first (windows before the MR they are bound
    // to; MRs of their own before the table they pin); their READs fail.
    for (auto& [id, c] : connections_)
      if (c->epoch == r.table->epoch() && c->id->verbs == r.device) c->grant.reset();
    return true;
  });
  std::optional<Clock::time_point> next;
  for (const Registration& r : registrations_)
    if (r.retired_at != Clock::time_point{})
      next = std::min(next.value_or(Clock::time_point::max()), r.retired_at + limits_.retire_grace);
  if (!next) return;
  const timeval tv = to_timeval(std::chrono::duration_cast<std::chrono::microseconds>(*next - now) +
                                 std::chrono::milliseconds(10));
  evtimer_add(retire_timer_.get(), &tv);
}

}  // namespace rrs
