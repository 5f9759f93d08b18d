// The client's data path: RDMA READs posted as one chain per batch (one
// doorbell), selectively signaled, retired in order; and the two-phase
// teardown that collects what is still in flight. No allocation per post:
// the work requests and the record of what is outstanding are fixed arrays.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/transport/transport.h"
#include "common/transport/verbs/owners.h"
#include "common/transport/verbs/queue_depths.h"
#include "common/transport/verbs/work_request.h"

namespace rrs::verbs {

class ReadQueue {
 public:
  // Where a READ of `region` goes on the server, and the lkey of a local
  // destination (0: not registered).
  struct Remote {
    uint64_t table_addr = 0, log_addr = 0;
    uint32_t table_rkey = 0, log_rkey = 0;
  };
  using LkeyFor = uint32_t (*)(const void* owner, const std::byte* p, size_t len);

  // Posts `batch` (already checked by ClientSession::check_batch) as one chain.
  Status post(ibv_qp* qp, std::span<const TableRead> batch, const Remote& remote, const void* owner,
              LkeyFor lkey_for);
  // Notes a control SEND (signaled) posted on the same send queue, so the
  // in-order retirement counts it; false when the queue is full.
  bool note_send(uint64_t wr_id);

  // Takes every completion already queued, without waiting: finished READs
  // go to `done`, a RECV to `on_recv(wc)`. A failed completion fails the call
  // (a remote access error means the server no longer exposes that epoch).
  template <typename OnRecv>
  Status reap(ibv_cq* cq, std::vector<uint64_t>& done, OnRecv&& on_recv) {
    ibv_wc wc[kPollBatch];
    int n;
    while ((n = ibv_poll_cq(cq, kPollBatch, wc)) > 0) {
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return completion_error(wc[i]);
        if (wr_id::is_recv(wc[i].wr_id)) {
          RRS_RETURN_IF_ERROR(on_recv(wc[i]));
          continue;
        }
        retire(wc[i].wr_id, &done);
      }
    }
    if (n < 0) return Status::error("poll", "ibv_poll_cq failed");
    return {};
  }

  // Two-phase teardown: moves the QP to ERR and collects the flushed WRs
  // (bounded wait), so nothing is in flight when the QP is destroyed.
  void drain(ibv_qp* qp, ibv_cq* cq);
  // Forgets everything (a new connection).
  void clear();

  size_t reads_outstanding() const { return reads_outstanding_; }
  // Restarts the signaling count (after a signaled control SEND).
  void signaled_now() { posted_since_signal_ = 0; }

 private:
  struct Outstanding {
    uint64_t id;
    bool signaled;
  };
  // Everything on the send queue, oldest first: a fixed ring as deep as the queue.
  static constexpr size_t kRing = kClientSendWr;

  // In-order completion: the signaled WR `id` retires every WR posted before it.
  void retire(uint64_t id, std::vector<uint64_t>* done);
  bool pending_signal() const;
  Status completion_error(const ibv_wc& wc) const;
  bool push(Outstanding o);
  Outstanding pop();

  std::array<Outstanding, kRing> ring_{};
  size_t head_ = 0, count_ = 0;
  size_t reads_outstanding_ = 0;
  uint32_t posted_since_signal_ = 0;
  std::array<ibv_send_wr, kMaxReadWr> wrs_{};
  std::array<ibv_sge, kMaxReadWr> sges_{};
};

}  // namespace rrs::verbs
