#include "tests/support/raw_verbs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/auth/auth.h"

namespace rrs::test {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(left.count(), 0));
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string copy_private_data(const rdma_cm_event& ev) {
  if (!ev.param.conn.private_data) return {};
  return {static_cast<const char*>(ev.param.conn.private_data), ev.param.conn.private_data_len};
}

// Up to `timeout` for one event on a non-blocking channel; the event is
// acked when the returned owner goes.
Result<verbs::CmEvent> next_cm_event(rdma_event_channel* channel, std::chrono::milliseconds timeout,
                                     int stop_fd = -1) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    rdma_cm_event* raw = nullptr;
    if (rdma_get_cm_event(channel, &raw) == 0) return verbs::CmEvent(raw);
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Status::from_errno("rdma_get_cm_event");
    pollfd fds[2] = {{channel->fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int n = ::poll(fds, stop_fd >= 0 ? 2 : 1, ms_left(deadline));
    if (n < 0 && errno != EINTR) return Status::from_errno("poll");
    if (stop_fd >= 0 && (fds[1].revents & POLLIN))
      return Status::error("wait for a CM event", "stopped");
    if (n == 0 && Clock::now() >= deadline)
      return Status::error("wait for a CM event", "timed out", ETIMEDOUT);
  }
}

}  // namespace

// --- MessageQp -----------------------------------------------------------------

MessageQp::~MessageQp() {
  // Flush what is still posted before the QP goes (two-phase teardown).
  if (qp_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp_.get(), &attr, IBV_QP_STATE);
  }
}

Status MessageQp::create(rdma_cm_id* id, bool post_recvs) {
  pd_.reset(ibv_alloc_pd(id->verbs));
  if (!pd_) return Status::from_errno("ibv_alloc_pd");
  cq_ = verbs::CompletionQueue(ibv_create_cq(id->verbs, 32, nullptr, nullptr, 0));
  if (!cq_.get()) return Status::from_errno("ibv_create_cq");
  mr_.reset(ibv_reg_mr(pd_.get(), buf_.data(), buf_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!mr_) return Status::from_errno("ibv_reg_mr");
  exposed_mr_.reset(ibv_reg_mr(pd_.get(), exposed_.data(), exposed_.size(),
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
  if (!exposed_mr_) return Status::from_errno("ibv_reg_mr");
  ibv_qp_init_attr qpa{};
  qpa.send_cq = qpa.recv_cq = cq_.get();
  qpa.qp_type = IBV_QPT_RC;
  qpa.cap = {8, kRecvSlots, 1, 1, 0};
  if (rdma_create_qp(id, pd_.get(), &qpa) != 0) return Status::from_errno("rdma_create_qp");
  qp_ = verbs::QueuePair(id);
  if (post_recvs)
    for (uint32_t slot = 0; slot < kRecvSlots; ++slot)
      if (!post_recv(slot)) return Status::from_errno("ibv_post_recv");
  return {};
}

void MessageQp::fill_exposed(std::string_view bytes) {
  std::memcpy(exposed_.data(), bytes.data(), std::min(bytes.size(), exposed_.size()));
}

bool MessageQp::post_recv(uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buf_.data() + slot * kSlot), kSlot, mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot;  // receives: ids below kRecvSlots; sends and READs: above
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp_.get(), &wr, &bad) == 0;
}

void MessageQp::pump(const std::function<bool()>& done, Clock::time_point deadline) {
  while (!done()) {
    ibv_wc wc{};
    int n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n < 0) {
      broken_ = "ibv_poll_cq failed";
      return;
    }
    if (n == 0) {
      if (Clock::now() >= deadline) return;
      // The tests wait for a peer's few messages: polling every ms is cheap enough.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (wc.wr_id < kRecvSlots) {
      if (wc.status != IBV_WC_SUCCESS) {
        broken_ = std::string("receive failed: ") + ibv_wc_status_str(wc.status);
        continue;
      }
      const auto slot = static_cast<uint32_t>(wc.wr_id);
      inbox_.emplace_back(reinterpret_cast<const char*>(buf_.data() + slot * kSlot),
                          std::min<size_t>(wc.byte_len, kSlot));
      if (!post_recv(slot)) broken_ = "ibv_post_recv failed";
    } else {
      results_[wc.wr_id] = wc.status;
    }
  }
}

Status MessageQp::post_send(ibv_send_wr& wr, std::chrono::milliseconds timeout) {
  wr.wr_id = kRecvSlots + next_wr_id_++;
  wr.send_flags |= IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_.get(), &wr, &bad); rc != 0)
    return Status::from_errno("ibv_post_send", rc);
  const uint64_t id = wr.wr_id;
  pump([&] { return results_.count(id) != 0; }, Clock::now() + timeout);
  auto it = results_.find(id);
  if (it == results_.end())
    return Status::error("wait for a send completion", "timed out", ETIMEDOUT);
  const ibv_wc_status status = it->second;
  results_.erase(it);
  if (status != IBV_WC_SUCCESS) return Status::error("work request", ibv_wc_status_str(status));
  return {};
}

Status MessageQp::send(std::string_view bytes, std::chrono::milliseconds timeout) {
  if (bytes.size() > kSlot) return Status::error("send", "message bigger than a slot");
  std::byte* slot = buf_.data() + kRecvSlots * kSlot;
  std::memcpy(slot, bytes.data(), bytes.size());
  ibv_sge sge{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(bytes.size()), mr_->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = bytes.empty() ? 0 : 1;
  wr.opcode = IBV_WR_SEND;
  return post_send(wr, timeout);
}

Result<std::string> MessageQp::receive(std::chrono::milliseconds timeout) {
  pump([&] { return !inbox_.empty() || !broken_.empty(); }, Clock::now() + timeout);
  if (!inbox_.empty()) {
    std::string m = std::move(inbox_.front());
    inbox_.pop_front();
    return m;
  }
  if (!broken_.empty()) return Status::error("receive", broken_);
  return Status::error("receive", "no message in time", ETIMEDOUT);
}

Result<std::string> MessageQp::read(uint64_t addr, uint32_t rkey, uint32_t length,
                                    std::chrono::milliseconds timeout) {
  if (length > kReadMax) return Status::error("read", "longer than the read buffer");
  std::byte* dst = buf_.data() + (kRecvSlots + 1) * kSlot;
  ibv_sge sge{reinterpret_cast<uint64_t>(dst), length, mr_->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma.remote_addr = addr;
  wr.wr.rdma.rkey = rkey;
  RRS_RETURN_IF_ERROR(post_send(wr, timeout));
  return std::string(reinterpret_cast<const char*>(dst), length);
}

// --- RawVerbsPeer --------------------------------------------------------------

Result<std::unique_ptr<RawVerbsPeer>> RawVerbsPeer::connect(const Endpoint& server,
                                                            std::string_view private_data,
                                                            Options options,
                                                            std::chrono::milliseconds timeout) {
  std::unique_ptr<RawVerbsPeer> p(new RawVerbsPeer());
  p->channel_.reset(rdma_create_event_channel());
  if (!p->channel_) return Status::from_errno("rdma_create_event_channel");
  set_nonblocking(p->channel_->fd);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(p->channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    return Status::from_errno("rdma_create_id");
  p->id_.reset(id);

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(server.host.c_str(), std::to_string(server.port).c_str(), &hints, &res);
      rc != 0)
    return Status::error("resolve " + server.host, gai_strerror(rc));
  int rc = rdma_resolve_addr(id, nullptr, res->ai_addr, 2000);
  freeaddrinfo(res);
  if (rc != 0) return Status::from_errno("rdma_resolve_addr");
  for (auto [want, step] : {std::pair{RDMA_CM_EVENT_ADDR_RESOLVED, "resolve the address"},
                            std::pair{RDMA_CM_EVENT_ROUTE_RESOLVED, "resolve the route"}}) {
    if (want == RDMA_CM_EVENT_ROUTE_RESOLVED && rdma_resolve_route(id, 2000) != 0)
      return Status::from_errno("rdma_resolve_route");
    auto ev = p->next_event(timeout);
    if (!ev.ok()) return ev.status();
    if ((*ev)->event != want) return Status::error(step, rdma_event_str((*ev)->event));
  }
  RRS_RETURN_IF_ERROR(p->qp_.create(id, options.post_recvs));

  rdma_conn_param cp{};
  cp.private_data = private_data.empty() ? nullptr : private_data.data();
  cp.private_data_len = static_cast<uint8_t>(private_data.size());
  cp.initiator_depth = options.initiator_depth;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp) != 0) return Status::from_errno("rdma_connect");
  auto ev = p->next_event(timeout);
  if (!ev.ok()) return ev.status();
  p->event_name_ = rdma_event_str((*ev)->event);
  p->answer_ = copy_private_data(**ev);
  p->outcome_ = (*ev)->event == RDMA_CM_EVENT_ESTABLISHED ? Outcome::kEstablished
                : (*ev)->event == RDMA_CM_EVENT_REJECTED  ? Outcome::kRejected
                                                          : Outcome::kOther;
  return p;
}

Result<std::unique_ptr<RawVerbsPeer>> RawVerbsPeer::connect_hello(const Endpoint& server,
                                                                  Options options) {
  control::Hello hello;
  hello.client_nonce = *auth::random_nonce();
  auto p = connect(server, control::encode_connect(hello), options, std::chrono::seconds(5));
  if (p.ok()) (*p)->nonce_ = hello.client_nonce;
  return p;
}

RawVerbsPeer::~RawVerbsPeer() {
  if (outcome_ == Outcome::kEstablished && !disconnected_ && id_) rdma_disconnect(id_.get());
}

Result<verbs::CmEvent> RawVerbsPeer::next_event(std::chrono::milliseconds timeout) {
  return next_cm_event(channel_.get(), timeout);
}

bool RawVerbsPeer::wait_disconnected(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!disconnected_) {
    auto ev = next_event(std::chrono::milliseconds(ms_left(deadline)));
    if (!ev.ok()) return false;
    disconnected_ = (*ev)->event == RDMA_CM_EVENT_DISCONNECTED;
    if (!disconnected_)
      other_events_ += (other_events_.empty() ? "" : ", ") +
                       std::string(rdma_event_str((*ev)->event));
  }
  return true;
}

// --- ScriptedVerbsServer -------------------------------------------------------

ScriptedVerbsServer::ScriptedVerbsServer(OnConnect on_connect, AfterEstablished after)
    : on_connect_(std::move(on_connect)), after_(std::move(after)) {
  stop_fd_ = eventfd(0, EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    status_ = Status::from_errno("eventfd");
    return;
  }
  channel_.reset(rdma_create_event_channel());
  if (!channel_) {
    status_ = Status::from_errno("rdma_create_event_channel");
    return;
  }
  set_nonblocking(channel_->fd);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0) {
    status_ = Status::from_errno("rdma_create_id");
    return;
  }
  listen_id_.reset(id);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, verbs_address().c_str(), &a.sin_addr) != 1) {
    status_ = Status::error("listen", "RRS_VERBS_ADDR is not an IPv4 address");
    return;
  }
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) != 0 || rdma_listen(id, 8) != 0) {
    status_ = Status::from_errno("rdma_bind_addr/rdma_listen");
    return;
  }
  port_ = ntohs(rdma_get_src_port(id));
  thread_ = std::thread([this] { run(); });
}

ScriptedVerbsServer::~ScriptedVerbsServer() {
  const uint64_t one = 1;
  if (stop_fd_ >= 0) (void)::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  for (auto& [id, a] : accepted_) rdma_disconnect(id);
  accepted_.clear();
  ignored_.clear();
  listen_id_.reset();
  channel_.reset();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void ScriptedVerbsServer::run() {
  for (;;) {
    auto ev = next_cm_event(channel_.get(), std::chrono::hours(1), stop_fd_);
    if (!ev.ok()) return;  // stopped
    // Copy what is needed and ack at once: rdma_destroy_id waits for the acks.
    const rdma_cm_event_type type = (*ev)->event;
    rdma_cm_id* id = (*ev)->id;
    rdma_conn_param param = (*ev)->param.conn;
    std::string data = copy_private_data(**ev);
    param.private_data = data.data();
    ev->reset();
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      ++connect_requests_;
      on_connect_request(id, param);
    } else if (type == RDMA_CM_EVENT_ESTABLISHED) {
      auto it = accepted_.find(id);
      if (it != accepted_.end() && after_) after_(*it->second.conn);
    } else if (type == RDMA_CM_EVENT_DISCONNECTED) {
      accepted_.erase(id);
    }
  }
}

void ScriptedVerbsServer::on_connect_request(rdma_cm_id* id, const rdma_conn_param& param) {
  Answer answer = on_connect_(
      std::string(static_cast<const char*>(param.private_data), param.private_data_len));
  const auto len = static_cast<uint8_t>(answer.private_data.size());
  switch (answer.kind) {
    case Answer::Kind::kIgnore: ignored_.emplace_back(id); return;
    case Answer::Kind::kReject:
      rdma_reject(id, answer.private_data.data(), len);
      rdma_destroy_id(id);
      return;
    case Answer::Kind::kAccept: break;
  }
  Accepted a{verbs::CmId(id), std::make_unique<Connection>()};
  a.conn->connect_data.assign(static_cast<const char*>(param.private_data), param.private_data_len);
  a.conn->hold = [this] {
    pollfd p{stop_fd_, POLLIN, 0};
    (void)::poll(&p, 1, -1);
  };
  a.conn->disconnect = [id] { rdma_disconnect(id); };
  if (!a.conn->qp.create(id, true).ok()) {
    rdma_reject(id, nullptr, 0);
    return;
  }
  ibv_device_attr dev{};
  ibv_query_device(id->verbs, &dev);
  rdma_conn_param cp{};
  cp.private_data = answer.private_data.empty() ? nullptr : answer.private_data.data();
  cp.private_data_len = len;
  cp.responder_resources = static_cast<uint8_t>(
      std::min<int>(param.responder_resources, dev.max_qp_rd_atom));
  if (rdma_accept(id, &cp) != 0) return;
  accepted_.emplace(id, std::move(a));
}

}  // namespace rrs::test
