#include "common/transport/verbs/read_queue.h"

#include <thread>

namespace rrs::verbs {

Status ReadQueue::post(ibv_qp* qp, std::span<const TableRead> batch, const Remote& remote,
                       const void* owner, LkeyFor lkey_for) {
  if (batch.empty()) return {};
  if (batch.size() > wrs_.size() || count_ + batch.size() > kRing)
    return Status::error("post RDMA READ", "more reads than the send queue holds");
  for (size_t i = 0; i < batch.size(); ++i) {
    const TableRead& r = batch[i];
    const bool log = r.region == control::Region::kChangeLog;
    uint32_t lkey = lkey_for(owner, r.dst.data(), r.dst.size());
    if (lkey == 0) return Status::error("post RDMA READ", "destination is not a registered buffer");
    sges_[i] = {reinterpret_cast<uint64_t>(r.dst.data()), static_cast<uint32_t>(r.dst.size()),
                lkey};
    const bool signal = ++posted_since_signal_ >= kSignalEvery || i + 1 == batch.size();
    if (signal) posted_since_signal_ = 0;
    ibv_send_wr& wr = wrs_[i];
    wr = {};
    wr.wr_id = r.id;
    wr.sg_list = &sges_[i];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (r.fence ? IBV_SEND_FENCE : 0);
    wr.wr.rdma.remote_addr = (log ? remote.log_addr : remote.table_addr) + r.offset;
    wr.wr.rdma.rkey = log ? remote.log_rkey : remote.table_rkey;
    wr.next = i + 1 < batch.size() ? &wrs_[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp, wrs_.data(), &bad); rc != 0)
    return Status::from_errno("ibv_post_send", rc).as(ErrorKind::kUnavailable);
  for (size_t i = 0; i < batch.size(); ++i)
    (void)push({batch[i].id, (wrs_[i].send_flags & IBV_SEND_SIGNALED) != 0});  // room checked above
  reads_outstanding_ += batch.size();
  return {};
}

bool ReadQueue::note_send(uint64_t wr_id) {
  posted_since_signal_ = 0;
  return push({wr_id, true});
}

void ReadQueue::retire(uint64_t id, std::vector<uint64_t>* done) {
  while (count_ > 0) {
    Outstanding o = pop();
    if (!wr_id::is_control(o.id)) {
      if (done) done->push_back(o.id);
      --reads_outstanding_;
    }
    if (o.signaled && o.id == id) break;
  }
}

Status ReadQueue::completion_error(const ibv_wc& wc) const {
  std::string why = ibv_wc_status_str(wc.status);
  if (wc.status == IBV_WC_REM_ACCESS_ERR)
    why += ": the server no longer exposes that table (epoch gone); start over";
  return Status::error("completion", why);
}

bool ReadQueue::pending_signal() const {
  for (size_t i = 0; i < count_; ++i)
    if (ring_[(head_ + i) % kRing].signaled) return true;
  return false;
}

void ReadQueue::drain(ibv_qp* qp, ibv_cq* cq) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(qp, &attr, IBV_QP_STATE);
  // Flushed WRs complete with an error status; wait (bounded) for the last
  // signaled one so nothing is in flight when the QP goes.
  const auto until = Clock::now() + kDrainTimeout;
  while (pending_signal() && Clock::now() < until) {
    ibv_wc wc[kPollBatch];
    int n = ibv_poll_cq(cq, kPollBatch, wc);
    for (int i = 0; i < n; ++i)
      if (!wr_id::is_recv(wc[i].wr_id)) retire(wc[i].wr_id, nullptr);
    if (n <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  clear();
}

void ReadQueue::clear() {
  head_ = count_ = 0;
  reads_outstanding_ = 0;
  posted_since_signal_ = 0;
}

bool ReadQueue::push(Outstanding o) {
  if (count_ == kRing) return false;
  ring_[(head_ + count_) % kRing] = o;
  ++count_;
  return true;
}

ReadQueue::Outstanding ReadQueue::pop() {
  Outstanding o = ring_[head_];
  head_ = (head_ + 1) % kRing;
  --count_;
  return o;
}

}  // namespace rrs::verbs
