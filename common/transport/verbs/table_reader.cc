// VerbsTableReader, setup and teardown: connect (resolve, resources,
// rdma_connect with HELLO, the accept, AUTH) and close. The data path is in
// table_reader_io.cc.
#include "common/transport/verbs/table_reader.h"

#include <fcntl.h>

#include <algorithm>

#include "common/transport/verbs/completion_wait.h"

namespace rrs {

using verbs::wr_id::is_recv;

VerbsTableReader::VerbsTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                                   std::optional<std::string> secret)
    : server_(std::move(server)), io_timeout_(io_timeout), session_(std::move(secret)) {}

VerbsTableReader::~VerbsTableReader() { close(); }

// One deadline for the whole call: every CM step and the AUTH exchange of
// every attempt end by it (a first attempt gets at least one resolve
// timeout), so a server that accepts and then says nothing, or a fabric that
// drops the CM's packets, cannot hold us past --connect-timeout.
Status VerbsTableReader::connect(Clock::time_point deadline) {
  deadline = std::max(deadline, Clock::now() + std::chrono::milliseconds(verbs::kResolveTimeoutMs));
  Status s = connect_with_backoff(deadline, [&](Clock::time_point until) {
    Status tried = attempt(until);
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

Status VerbsTableReader::create_resources() {
  ibv_context* device = cm_.id()->verbs;
  pd_.reset(ibv_alloc_pd(device));
  if (!pd_) return Status::from_errno("ibv_alloc_pd");
  comp_channel_.reset(ibv_create_comp_channel(device));
  if (!comp_channel_) return Status::from_errno("ibv_create_comp_channel");
  fcntl(comp_channel_->fd, F_SETFL, fcntl(comp_channel_->fd, F_GETFL) | O_NONBLOCK);
  cq_ = verbs::CompletionQueue(
      ibv_create_cq(device, verbs::kClientCqDepth, nullptr, comp_channel_.get(), 0));
  if (!cq_.get()) return Status::from_errno("ibv_create_cq");
  if (ibv_req_notify_cq(cq_.get(), 0) != 0) return Status::from_errno("ibv_req_notify_cq");
  if (!msgs_.register_in(pd_.get())) return Status::from_errno("register keepalive buffers");
  ibv_qp_init_attr qpa{.qp_context = nullptr,
                       .send_cq = cq_.get(),
                       .recv_cq = cq_.get(),
                       .srq = nullptr,
                       .cap = verbs::client_qp_caps(),
                       .qp_type = IBV_QPT_RC,
                       .sq_sig_all = 0};
  if (rdma_create_qp(cm_.id(), pd_.get(), &qpa) != 0) return Status::from_errno("rdma_create_qp");
  qp_ = verbs::QueuePair(cm_.id());
  if (int rc = msgs_.post_all_recvs(qp_.get()); rc != 0)
    return Status::from_errno("post a receive", rc);
  return {};
}

Status VerbsTableReader::attempt(Clock::time_point deadline) {
  close();  // a previous connection's objects, in order
  RRS_RETURN_IF_ERROR(cm_.resolve(server_, deadline));
  RRS_RETURN_IF_ERROR(create_resources());
  rdma_cm_id* id = cm_.id();
  ibv_device_attr dev{};
  if (ibv_query_device(id->verbs, &dev) != 0) return Status::from_errno("ibv_query_device");
  ibv_port_attr port_attr{};
  if (ibv_query_port(id->verbs, id->port_num, &port_attr) != 0)
    return Status::from_errno("ibv_query_port");

  RRS_ASSIGN_OR_RETURN(control::Hello hello, session_.start(deadline));
  std::string connect_data = control::encode_connect(hello);
  rdma_conn_param cp{};
  cp.private_data = connect_data.data();
  cp.private_data_len = static_cast<uint8_t>(connect_data.size());
  // We issue READs: ask for as many outstanding as the device allows.
  cp.initiator_depth = static_cast<uint8_t>(
      std::min<int>(dev.max_qp_init_rd_atom, verbs::kInitiatorDepthCap));
  cp.responder_resources = 0;
  cp.retry_count = verbs::kRetryCount;
  cp.rnr_retry_count = verbs::kRnrRetryCount;
  auto ev = cm_.connect(cp, deadline);
  if (!ev.ok()) return ev.status();
  const auto& conn = (*ev)->param.conn;
  auto proof = session_.on_accept({static_cast<const std::byte*>(conn.private_data),
                                   conn.private_data ? conn.private_data_len : 0u});
  if (!proof.ok()) return proof.status();
  if (*proof)
    RRS_RETURN_IF_ERROR(authenticate(**proof, std::min(deadline, Clock::now() + io_timeout_)));
  const control::HelloOk& terms = session_.hello_ok();
  max_in_flight_ = std::min(terms.max_in_flight, verbs::kMaxReadWr);
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
  if (int rc = msgs_.post_send(qp_.get(), msg, verbs::wr_id::kAuth); rc != 0)
    return Status::from_errno("send AUTH", rc).as(ErrorKind::kUnavailable);
  auto answer = receive_auth_answer(deadline);
  if (!answer.ok()) return answer.status().wrap("authenticate to rdma-server");
  return session_.on_auth_answer(std::as_bytes(std::span(*answer)));
}

// Both completions are taken: the message's RECV and our AUTH SEND's (which
// may come after it), so no stray send completion is left for reap(), which
// would take it for the end of a chain of READs. The server disconnects
// right after an ERROR, and the ERROR is in the CQ first: a disconnect is
// reported only once the CQ holds nothing more.
Result<std::string> VerbsTableReader::receive_auth_answer(Clock::time_point deadline) {
  bool sent = false;
  std::optional<std::string> msg;
  Status gone;
  auto take = [&]() -> Result<bool> {
    for (;;) {
      if (msg && sent) return true;
      ibv_wc wc{};
      int n = ibv_poll_cq(cq_.get(), 1, &wc);
      if (n == 0 && !gone.ok()) return msg ? Result<bool>(true) : gone;
      if (n < 0) return Status::error("ibv_poll_cq", "failed").as(ErrorKind::kUnavailable);
      if (n == 0) return false;
      if (wc.status != IBV_WC_SUCCESS)
        return !gone.ok() ? gone
                          : Status::error("receive from rdma-server", ibv_wc_status_str(wc.status))
                                .as(ErrorKind::kUnavailable);
      if (!is_recv(wc.wr_id)) {
        sent = true;  // our AUTH went out
        continue;
      }
      auto bytes = msgs_.received(wc.wr_id, wc.byte_len);
      msg.emplace(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (int rc = msgs_.post_recv(qp_.get(), verbs::wr_id::slot_of(wc.wr_id)); rc != 0)
        return Status::from_errno("post a receive", rc);
    }
  };
  auto on_cm = [&]() -> Status {
    gone = cm_.check_events();
    return {};
  };
  auto timed_out = [] {
    return Status::error("receive from rdma-server", "timed out waiting for the answer to AUTH",
                         ETIMEDOUT)
        .as(ErrorKind::kUnavailable);
  };
  Status s = verbs::wait_for_completions(cq_, comp_channel_.get(), cm_.fd(), deadline,
                                         std::chrono::milliseconds::max(), take, on_cm, timed_out);
  if (!s.ok()) return s;
  return *msg;
}

void VerbsTableReader::close() {
  if (qp_) {
    queue_.drain(qp_.get(), cq_.get());
    reaped_early_.clear();
    cm_.disconnect();
  }
  mrs_.clear();
  qp_.reset();
  msgs_.reset();
  cq_.reset();
  comp_channel_.reset();
  pd_.reset();
  cm_.reset();
  queue_.clear();
}

}  // namespace rrs
