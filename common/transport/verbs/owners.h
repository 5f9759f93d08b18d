// Move-only owners for every rdma-core object we create. Each releases its
// object exactly once, never throws, and is declared by its users in creation
// order so that members are destroyed in the reverse order rdma-core's
// examples clean up: MWs, MRs, QP, CQ, completion channel, PD, cm_id, event
// channel.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>
#include <utility>

namespace rrs::verbs {

template <auto Release>
struct Releaser {
  template <typename T>
  void operator()(T* p) const noexcept {
    if (p) (void)Release(p);
  }
};

using EventChannel = std::unique_ptr<rdma_event_channel, Releaser<rdma_destroy_event_channel>>;
using CmId = std::unique_ptr<rdma_cm_id, Releaser<rdma_destroy_id>>;
using ProtectionDomain = std::unique_ptr<ibv_pd, Releaser<ibv_dealloc_pd>>;
// A PD with more than one owner (made from a ProtectionDomain, whose releaser
// it keeps): a client's own PD under kPdPerClient, held by its connection and
// by a registration in flight for it; the last of them deallocates it.
using SharedProtectionDomain = std::shared_ptr<ibv_pd>;
using CompletionChannel = std::unique_ptr<ibv_comp_channel, Releaser<ibv_destroy_comp_channel>>;
using MemoryRegion = std::unique_ptr<ibv_mr, Releaser<ibv_dereg_mr>>;
// A memory window; deallocating it invalidates every rkey it was bound under.
// Drop it before the MR it is bound to (a bound MR cannot be deregistered).
// (ibv_dealloc_mw is static inline in verbs.h: wrapped for external linkage.)
inline int dealloc_mw(ibv_mw* mw) { return ibv_dealloc_mw(mw); }
using MemoryWindow = std::unique_ptr<ibv_mw, Releaser<dealloc_mw>>;

// A CM event; acknowledged (as rdma_cm requires for every event) when dropped.
using CmEvent = std::unique_ptr<rdma_cm_event, Releaser<rdma_ack_cm_event>>;

// A CQ and the completion-channel events taken from it but not yet
// acknowledged: ibv_destroy_cq waits for every event to be acked, so the
// owner acks the remainder before destroying.
class CompletionQueue {
 public:
  CompletionQueue() = default;
  explicit CompletionQueue(ibv_cq* cq) : cq_(cq) {}
  ~CompletionQueue() { reset(); }
  CompletionQueue(CompletionQueue&& o) noexcept
      : cq_(std::exchange(o.cq_, nullptr)), unacked_(std::exchange(o.unacked_, 0)) {}
  CompletionQueue& operator=(CompletionQueue&& o) noexcept {
    if (this != &o) {
      reset();
      cq_ = std::exchange(o.cq_, nullptr);
      unacked_ = std::exchange(o.unacked_, 0);
    }
    return *this;
  }
  ibv_cq* get() const { return cq_; }
  // Counts one event from ibv_get_cq_event; acks in batches (acking takes a lock).
  void event_taken() {
    if (++unacked_ >= kAckBatch) {
      ibv_ack_cq_events(cq_, unacked_);
      unacked_ = 0;
    }
  }
  void reset() noexcept {
    if (!cq_) return;
    if (unacked_) ibv_ack_cq_events(cq_, unacked_);
    ibv_destroy_cq(cq_);
    cq_ = nullptr;
    unacked_ = 0;
  }

 private:
  static constexpr unsigned kAckBatch = 16;
  ibv_cq* cq_ = nullptr;
  unsigned unacked_ = 0;
};

// A QP created with rdma_create_qp on a cm_id; destroyed with rdma_destroy_qp.
// The cm_id must outlive it (declare the CmId first).
class QueuePair {
 public:
  QueuePair() = default;
  explicit QueuePair(rdma_cm_id* id) : id_(id) {}
  ~QueuePair() { reset(); }
  QueuePair(QueuePair&& o) noexcept : id_(std::exchange(o.id_, nullptr)) {}
  QueuePair& operator=(QueuePair&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, nullptr);
    }
    return *this;
  }
  ibv_qp* get() const { return id_ ? id_->qp : nullptr; }
  explicit operator bool() const { return get() != nullptr; }
  void reset() noexcept {
    if (id_ && id_->qp) rdma_destroy_qp(id_);
    id_ = nullptr;
  }

 private:
  rdma_cm_id* id_ = nullptr;
};

}  // namespace rrs::verbs
