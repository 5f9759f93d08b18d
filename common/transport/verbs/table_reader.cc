#include "common/transport/verbs/table_reader.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <thread>


namespace rrs {
namespace {

constexpr int kResolveTimeoutMs = 2000;
constexpr uint8_t kInitiatorDepthCap = 16;

std::span<const std::byte> private_data(const rdma_cm_event& ev) {
  if (!ev.param.conn.private_data) return {};
  return {static_cast<const std::byte*>(ev.param.conn.private_data), ev.param.conn.private_data_len};
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

VerbsTableReader::VerbsTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                                   std::optional<std::string> secret)
    : server_(std::move(server)), io_timeout_(io_timeout), session_(std::move(secret)) {}

VerbsTableReader::~VerbsTableReader() { close(); }

Status VerbsTableReader::connect(Clock::time_point deadline) {
  Status s = connect_with_backoff(deadline, [&](bool& retry) {
    Status tried = attempt(deadline, retry);
    if (!tried.ok()) close();
    return tried;
  });
  if (!s.ok()) return s.wrap("connect to rdma-server at " + server_.to_string() + " over RDMA");
  for (auto span : registered_spans_) {
    ibv_mr* mr = ibv_reg_mr(pd_.get(), span.data(), span.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return Status::from_errno("register a read buffer");
    mrs_.emplace_back(mr);
  }
  return {};
}

Result<verbs::CmEvent> VerbsTableReader::wait_cm_event(rdma_cm_event_type want,
                                                       std::chrono::milliseconds timeout,
                                                       bool& retryable) {
  pollfd p{channel_->fd, POLLIN, 0};
  int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout.count(), 1)));
  if (n <= 0) {
    retryable = true;
    return Status::error(std::string("wait for ") + rdma_event_str(want), "timed out", ETIMEDOUT)
        .as(ErrorKind::kUnavailable);
  }
  rdma_cm_event* raw = nullptr;
  if (rdma_get_cm_event(channel_.get(), &raw) != 0)
    return Status::from_errno("rdma_get_cm_event").as(ErrorKind::kUnavailable);
  verbs::CmEvent ev(raw);
  if (ev->event == want) return ev;

  std::string step = std::string("wait for ") + rdma_event_str(want);
  std::string why = std::string(rdma_event_str(ev->event)) + " (status " +
                    std::to_string(ev->status) + ")";
  switch (ev->event) {
    case RDMA_CM_EVENT_REJECTED: {
      auto err = control::decode_reject(private_data(*ev));
      if (err.ok()) {
        retryable = ClientSession::worth_retrying(err->code);
        return ClientSession::server_error(*err);
      }
      retryable = true;  // no listener on that port (yet)
      why += ": nothing is listening for RDMA connections on that port";
      break;
    }
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
      retryable = true;
      break;
    case RDMA_CM_EVENT_ADDR_ERROR:
      why += ": no RDMA device can reach that address";
      break;
    case RDMA_CM_EVENT_ROUTE_ERROR:
      why += ": no route to that address over RDMA";
      break;
    default:
      break;
  }
  return Status::error(step, why).as(ErrorKind::kUnavailable);
}

Status VerbsTableReader::attempt(Clock::time_point deadline, bool& retryable) {
  auto left = [&] {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                    std::chrono::milliseconds(kResolveTimeoutMs));
  };
  close();  // a previous connection's objects, in order
  channel_.reset(rdma_create_event_channel());
  if (!channel_) return Status::from_errno("rdma_create_event_channel");
  set_nonblocking(channel_->fd);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    return Status::from_errno("rdma_create_id");
  id_.reset(id);

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(server_.port);
  if (int rc = getaddrinfo(server_.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::error("resolve " + server_.host, gai_strerror(rc));
  int rc = rdma_resolve_addr(id, nullptr, res->ai_addr, kResolveTimeoutMs);
  freeaddrinfo(res);
  if (rc != 0) return Status::from_errno("rdma_resolve_addr").as(ErrorKind::kUnavailable);
  if (auto ev = wait_cm_event(RDMA_CM_EVENT_ADDR_RESOLVED, left(), retryable); !ev.ok())
    return ev.status();
  if (rdma_resolve_route(id, kResolveTimeoutMs) != 0)
    return Status::from_errno("rdma_resolve_route").as(ErrorKind::kUnavailable);
  if (auto ev = wait_cm_event(RDMA_CM_EVENT_ROUTE_RESOLVED, left(), retryable); !ev.ok())
    return ev.status();

  pd_.reset(ibv_alloc_pd(id->verbs));
  if (!pd_) return Status::from_errno("ibv_alloc_pd");
  comp_channel_.reset(ibv_create_comp_channel(id->verbs));
  if (!comp_channel_) return Status::from_errno("ibv_create_comp_channel");
  set_nonblocking(comp_channel_->fd);
  // Send queue: the READs plus one keepalive; receive queue: its answers.
  cq_ = verbs::CompletionQueue(
      ibv_create_cq(id->verbs, kMaxSendWr + 1 + kRecvSlots, nullptr, comp_channel_.get(), 0));
  if (!cq_.get()) return Status::from_errno("ibv_create_cq");
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return Status::from_errno("ibv_req_notify_cq");
  msgs_mr_.reset(ibv_reg_mr(pd_.get(), msgs_.data(), msgs_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!msgs_mr_) return Status::from_errno("register keepalive buffers");
  ibv_qp_init_attr qpa{};
  qpa.send_cq = qpa.recv_cq = cq_.get();
  qpa.qp_type = IBV_QPT_RC;
  qpa.cap = {kMaxSendWr + 1, kRecvSlots, 1, 1, 0};
  if (rdma_create_qp(id, pd_.get(), &qpa) != 0) return Status::from_errno("rdma_create_qp");
  qp_ = verbs::QueuePair(id);
  for (uint32_t slot = 0; slot < kRecvSlots; ++slot)
    if (!post_recv(slot)) return Status::from_errno("post a receive");

  ibv_device_attr dev{};
  if (ibv_query_device(id->verbs, &dev) != 0) return Status::from_errno("ibv_query_device");
  ibv_port_attr port_attr{};
  if (ibv_query_port(id->verbs, id->port_num, &port_attr) != 0)
    return Status::from_errno("ibv_query_port");

  std::string connect_data = control::encode_connect(session_.start());
  rdma_conn_param cp{};
  cp.private_data = connect_data.data();
  cp.private_data_len = static_cast<uint8_t>(connect_data.size());
  // We issue READs: ask for as many outstanding as the device allows.
  cp.initiator_depth =
      static_cast<uint8_t>(std::min<int>(dev.max_qp_init_rd_atom, kInitiatorDepthCap));
  cp.responder_resources = 0;
  cp.retry_count = 7;
  cp.rnr_retry_count = 7;
  if (rdma_connect(id, &cp) != 0) return Status::from_errno("rdma_connect").as(ErrorKind::kUnavailable);
  auto ev = wait_cm_event(RDMA_CM_EVENT_ESTABLISHED, left(), retryable);
  if (!ev.ok()) return ev.status();
  auto proof = session_.on_accept(private_data(**ev));
  if (!proof.ok()) return proof.status();
  if (*proof)
    RRS_RETURN_IF_ERROR(authenticate(**proof, Clock::now() + std::max(left(), io_timeout_)));
  const control::HelloOk& terms = session_.hello_ok();
  max_in_flight_ = std::min(terms.max_in_flight, kMaxSendWr);
  max_read_len_ = std::min<uint32_t>(terms.max_read_len, port_attr.max_msg_sz);
  keepalive_interval_ = std::chrono::milliseconds(terms.keepalive_interval_ms);
  keepalive_seq_ = keepalive_acked_ = 0;
  heard_at_ = Clock::now();
  broken_ = false;
  return {};
}

Status VerbsTableReader::authenticate(const control::Proof& proof, Clock::time_point deadline) {
  std::string msg;
  control::append_auth(msg, 0, control::MsgType::kAuth, proof);
  if (int rc = post_message(msg, kAuthWrId); rc != 0)
    return Status::from_errno("send AUTH", rc).as(ErrorKind::kUnavailable);
  auto answer = receive_auth_answer(deadline);
  if (!answer.ok()) return answer.status().wrap("authenticate to rdma-server");
  return session_.on_auth_answer(std::as_bytes(std::span(*answer)));
}

// Both completions are taken: the message's RECV and our AUTH SEND's (which
// may come after it), so no stray send completion is left for reap(), which
// would take it for the end of a chain of READs.
Result<std::string> VerbsTableReader::receive_auth_answer(Clock::time_point deadline) {
  bool armed = false;
  bool sent = false;
  std::optional<std::string> msg;
  Status gone;  // a disconnect seen: report it once the CQ holds nothing more
  for (;;) {
    if (msg && sent) return *msg;
    ibv_wc wc{};
    int n = ibv_poll_cq(cq_.get(), 1, &wc);
    if (n == 0 && !gone.ok()) return msg ? Result<std::string>(*msg) : gone;
    if (n < 0) return Status::error("ibv_poll_cq", "failed").as(ErrorKind::kUnavailable);
    if (n == 1) {
      if (wc.status != IBV_WC_SUCCESS)
        return !gone.ok() ? gone
                          : Status::error("receive from rdma-server", ibv_wc_status_str(wc.status))
                                .as(ErrorKind::kUnavailable);
      if (!(wc.wr_id & kRecvWrBit)) {
        sent = true;  // our AUTH went out
        continue;
      }
      auto slot = static_cast<uint32_t>(wc.wr_id & ~kRecvWrBit);
      msg.emplace(reinterpret_cast<const char*>(msgs_.data() + slot * kMsgSlot),
                  std::min<size_t>(wc.byte_len, kMsgSlot));
      if (!post_recv(slot)) return Status::from_errno("post a receive");
      continue;
    }
    if (!armed) {
      if (ibv_req_notify_cq(cq_.get(), 0) != 0) return Status::from_errno("ibv_req_notify_cq");
      armed = true;
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Status::error("receive from rdma-server", "no answer in time", ETIMEDOUT)
          .as(ErrorKind::kUnavailable);
    pollfd fds[2] = {{comp_channel_->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}};
    int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return Status::from_errno("poll");
    // The server disconnects right after an ERROR: the ERROR is in the CQ first.
    if (fds[1].revents & POLLIN) gone = check_cm_channel();
    if (fds[0].revents & POLLIN) {
      ibv_cq* ev_cq = nullptr;
      void* ctx = nullptr;
      while (ibv_get_cq_event(comp_channel_.get(), &ev_cq, &ctx) == 0) cq_.event_taken();
      armed = false;
    }
  }
}

int VerbsTableReader::post_message(const std::string& msg, uint64_t wr_id) {
  std::byte* buf = msgs_.data() + kRecvSlots * kMsgSlot;
  std::memcpy(buf, msg.data(), msg.size());
  ibv_sge sge{reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(msg.size()), msgs_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp_.get(), &wr, &bad);
}

bool VerbsTableReader::post_recv(uint32_t slot) {
  ibv_sge sge{reinterpret_cast<uint64_t>(msgs_.data() + slot * kMsgSlot), kMsgSlot,
              msgs_mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = kRecvWrBit | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp_.get(), &wr, &bad) == 0;
}

Status VerbsTableReader::register_buffer(std::span<std::byte> memory) {
  registered_spans_.push_back(memory);
  if (!pd_) return {};  // registered when connected
  ibv_mr* mr = ibv_reg_mr(pd_.get(), memory.data(), memory.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr)
    return Status::from_errno("register a " + std::to_string(memory.size() >> 10) +
                              " KiB read buffer (check `ulimit -l`)");
  mrs_.emplace_back(mr);
  return {};
}

void VerbsTableReader::unregister_buffer(std::span<std::byte> memory) {
  std::erase_if(registered_spans_, [&](std::span<std::byte> s) {
    return s.data() == memory.data() && s.size() == memory.size();
  });
  std::erase_if(mrs_, [&](const verbs::MemoryRegion& mr) {
    return mr->addr == memory.data() && mr->length == memory.size();
  });
}

uint32_t VerbsTableReader::lkey_for(const std::byte* p, size_t len) const {
  for (auto it = mrs_.rbegin(); it != mrs_.rend(); ++it) {  // the newest registration wins
    auto* base = static_cast<const std::byte*>((*it)->addr);
    if (p >= base && p + len <= base + (*it)->length) return (*it)->lkey;
  }
  return 0;
}

Status VerbsTableReader::post_reads(std::span<const TableRead> batch) {
  if (broken_) return Status::error("post RDMA READ", "connection is broken").as(ErrorKind::kUnavailable);
  RRS_RETURN_IF_ERROR(
      session_.check_batch(batch, reads_outstanding_, max_read_len_, max_in_flight_));
  std::vector<ibv_send_wr> wrs(batch.size());
  std::vector<ibv_sge> sges(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const TableRead& r = batch[i];
    const control::Descriptor& d = session_.descriptor();
    const bool log = r.region == control::Region::kChangeLog;
    uint32_t lkey = lkey_for(r.dst.data(), r.dst.size());
    if (lkey == 0) return Status::error("post RDMA READ", "destination is not a registered buffer");
    sges[i] = {reinterpret_cast<uint64_t>(r.dst.data()), static_cast<uint32_t>(r.dst.size()), lkey};
    bool signal = ++posted_since_signal_ >= kSignalEvery || i + 1 == batch.size();
    if (signal) posted_since_signal_ = 0;
    ibv_send_wr& wr = wrs[i];
    wr.wr_id = r.id;
    wr.sg_list = &sges[i];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (r.fence ? IBV_SEND_FENCE : 0);
    wr.wr.rdma.remote_addr = (log ? d.log_addr : d.remote_addr) + r.offset;
    wr.wr.rdma.rkey = log ? d.log_rkey : d.rkey;
    wr.next = i + 1 < batch.size() ? &wrs[i + 1] : nullptr;
  }
  if (batch.empty()) return {};
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_.get(), wrs.data(), &bad); rc != 0)
    return Status::from_errno("ibv_post_send", rc).as(ErrorKind::kUnavailable);
  for (size_t i = 0; i < batch.size(); ++i)
    outstanding_.push_back({batch[i].id, (wrs[i].send_flags & IBV_SEND_SIGNALED) != 0});
  reads_outstanding_ += batch.size();
  return {};
}

Status VerbsTableReader::check_cm_channel() {
  rdma_cm_event* raw = nullptr;
  while (rdma_get_cm_event(channel_.get(), &raw) == 0) {
    verbs::CmEvent ev(raw);
    // Once established, any of these means the connection is gone (a
    // REJECTED here is the peer's CM refusing a connection it forgot).
    const auto e = ev->event;
    if (e == RDMA_CM_EVENT_DISCONNECTED || e == RDMA_CM_EVENT_DEVICE_REMOVAL ||
        e == RDMA_CM_EVENT_REJECTED || e == RDMA_CM_EVENT_CONNECT_ERROR ||
        e == RDMA_CM_EVENT_UNREACHABLE) {
      broken_ = true;
      return Status::error("read from rdma-server",
                           std::string("connection lost: ") + rdma_event_str(e))
          .as(ErrorKind::kUnavailable);
    }
  }
  return {};
}

Status VerbsTableReader::fail(std::string why) {
  broken_ = true;
  drain();
  return Status::error("RDMA connection to rdma-server at " + server_.to_string(), std::move(why))
      .as(ErrorKind::kUnavailable);
}

Status VerbsTableReader::reap(std::vector<uint64_t>& done) {
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(cq_.get(), 16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        std::string why = ibv_wc_status_str(wc[i].status);
        if (wc[i].status == IBV_WC_REM_ACCESS_ERR)
          why += ": the server no longer exposes that table (epoch gone); start over";
        return fail(why);
      }
      if (wc[i].wr_id & kRecvWrBit) {
        auto slot = static_cast<uint32_t>(wc[i].wr_id & ~kRecvWrBit);
        auto seq = control::decode_keepalive(
            std::span<const std::byte>(msgs_.data() + slot * kMsgSlot,
                                       std::min<size_t>(wc[i].byte_len, kMsgSlot)),
            control::MsgType::kKeepaliveAck);
        if (!seq.ok()) return fail("server sent a bad message: " + seq.status().reason());
        if (*seq == keepalive_seq_) {
          keepalive_acked_ = *seq;
          heard_at_ = Clock::now();
        }
        if (!post_recv(slot)) return fail("could not post a receive");
        continue;
      }
      // In-order completion: this signaled WR retires every WR posted before it.
      while (!outstanding_.empty()) {
        Outstanding o = outstanding_.front();
        outstanding_.pop_front();
        if (o.id != kKeepaliveWrId) {
          done.push_back(o.id);
          --reads_outstanding_;
        }
        if (o.signaled && o.id == wc[i].wr_id) break;
      }
    }
  }
  if (n < 0) return fail("ibv_poll_cq failed");
  return {};
}

Status VerbsTableReader::tick() {
  if (keepalive_interval_.count() == 0) return {};
  const auto now = Clock::now();
  if (now - heard_at_ > keepalive_interval_ * control::kKeepaliveMisses)
    return fail("rdma-server answered no keepalive for " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - heard_at_)
                                   .count()) +
                " ms");
  // One outstanding at a time; the next is due an interval after the last.
  if (keepalive_acked_ != keepalive_seq_ || now - keepalive_sent_at_ < keepalive_interval_)
    return {};
  if (int rc = post_message(
          control::encode_keepalive(control::MsgType::kKeepalive, keepalive_seq_ + 1),
          kKeepaliveWrId);
      rc != 0)
    return fail(std::string("could not send a keepalive: ") + std::strerror(rc));
  outstanding_.push_back({kKeepaliveWrId, true});
  posted_since_signal_ = 0;
  ++keepalive_seq_;
  keepalive_sent_at_ = now;
  return {};
}

Status VerbsTableReader::keepalive() {
  if (broken_) return Status::error("keepalive", "connection is broken").as(ErrorKind::kUnavailable);
  RRS_RETURN_IF_ERROR(reap(reaped_early_));
  RRS_RETURN_IF_ERROR(check_cm_channel());
  return tick();
}

Status VerbsTableReader::poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) {
  if (broken_) return Status::error("poll RDMA READs", "connection is broken").as(ErrorKind::kUnavailable);
  const auto deadline = Clock::now() + timeout;
  const size_t before = done.size();
  done.insert(done.end(), reaped_early_.begin(), reaped_early_.end());
  reaped_early_.clear();
  bool armed = false;
  for (;;) {
    RRS_RETURN_IF_ERROR(reap(done));
    RRS_RETURN_IF_ERROR(tick());
    if (done.size() > before || reads_outstanding_ == 0) return {};
    if (!armed) {
      // Arm, then poll once more: a completion may have landed in between.
      if (ibv_req_notify_cq(cq_.get(), 0) != 0) return Status::from_errno("ibv_req_notify_cq");
      armed = true;
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      return Status::error("RDMA READ from " + server_.to_string(),
                           "no completion within " + std::to_string(timeout.count()) + " ms", ETIMEDOUT)
          .as(ErrorKind::kUnavailable);
    // Wake up for the next keepalive too.
    if (keepalive_interval_.count() > 0) left = std::min(left, keepalive_interval_);
    pollfd fds[2] = {{comp_channel_->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}};
    int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return Status::from_errno("poll");
    if (fds[1].revents & POLLIN) RRS_RETURN_IF_ERROR(check_cm_channel());
    if (fds[0].revents & POLLIN) {
      ibv_cq* ev_cq = nullptr;
      void* ctx = nullptr;
      while (ibv_get_cq_event(comp_channel_.get(), &ev_cq, &ctx) == 0) cq_.event_taken();
      armed = false;
    }
  }
}

void VerbsTableReader::drain() {
  if (!qp_) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp_.get(), &attr, IBV_QP_STATE);
  // Flushed WRs complete with an error status; wait (bounded) for the last
  // signaled one so nothing is in flight when the QP goes.
  bool pending_signal = false;
  for (const Outstanding& o : outstanding_) pending_signal |= o.signaled;
  auto until = Clock::now() + std::chrono::seconds(1);
  while (pending_signal && Clock::now() < until) {
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq_.get(), 16, wc);
    for (int i = 0; i < n; ++i)
      while (!(wc[i].wr_id & kRecvWrBit) && !outstanding_.empty()) {
        Outstanding o = outstanding_.front();
        outstanding_.pop_front();
        if (o.signaled && o.id == wc[i].wr_id) break;
      }
    pending_signal = false;
    for (const Outstanding& o : outstanding_) pending_signal |= o.signaled;
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  outstanding_.clear();
  reads_outstanding_ = 0;
  reaped_early_.clear();
}

void VerbsTableReader::close() {
  if (qp_) {
    drain();
    rdma_disconnect(id_.get());
  }
  mrs_.clear();
  qp_.reset();
  msgs_mr_.reset();
  cq_.reset();
  comp_channel_.reset();
  pd_.reset();
  id_.reset();
  channel_.reset();
  posted_since_signal_ = 0;
}

}  // namespace rrs
