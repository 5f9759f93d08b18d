// The control messages of one RC connection (AUTH, its answer, keepalives,
// ERROR): receive slots, then send slots, in one buffer registered with local
// access only. Both sides use it; ids follow work_request.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <string_view>

#include "common/transport/verbs/owners.h"
#include "common/transport/verbs/queue_depths.h"
#include "common/transport/verbs/work_request.h"

namespace rrs::verbs {

template <uint32_t kRecv, uint32_t kSend>
class MessageSlots {
 public:
  // Registers the buffer in `pd`; false (errno set) on failure.
  bool register_in(ibv_pd* pd) {
    mr_.reset(ibv_reg_mr(pd, bytes_.data(), bytes_.size(), IBV_ACCESS_LOCAL_WRITE));
    return mr_ != nullptr;
  }
  void reset() { mr_.reset(); }

  // Posts a RECV into `slot` (id wr_id::recv(slot)); like ibv_post_recv, 0 or an errno.
  int post_recv(ibv_qp* qp, uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uint64_t>(slot_at(slot)), kMessageSlot, mr_->lkey};
    ibv_recv_wr wr{.wr_id = wr_id::recv(slot), .next = nullptr, .sg_list = &sge, .num_sge = 1};
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }
  int post_all_recvs(ibv_qp* qp) {
    for (uint32_t slot = 0; slot < kRecv; ++slot)
      if (int rc = post_recv(qp, slot); rc != 0) return rc;
    return 0;
  }

  // Copies `msg` into the next send slot (round robin) and SENDs it,
  // signaled, as `wr_id`; like ibv_post_send, 0 or an errno. The caller
  // keeps at most kSend SENDs in flight.
  int post_send(ibv_qp* qp, std::string_view msg, uint64_t wr_id) {
    if (msg.size() > kMessageSlot) return EMSGSIZE;
    std::byte* buf = slot_at(kRecv + next_send_);
    next_send_ = (next_send_ + 1) % kSend;
    std::memcpy(buf, msg.data(), msg.size());
    ibv_sge sge{reinterpret_cast<uint64_t>(buf), static_cast<uint32_t>(msg.size()), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  // The message a RECV completion of `id` delivered (`byte_len` bytes).
  std::span<const std::byte> received(uint64_t id, uint32_t byte_len) const {
    return {slot_at(wr_id::slot_of(id)), std::min<size_t>(byte_len, kMessageSlot)};
  }

 private:
  std::byte* slot_at(uint32_t slot) { return bytes_.data() + slot * kMessageSlot; }
  const std::byte* slot_at(uint32_t slot) const { return bytes_.data() + slot * kMessageSlot; }

  std::array<std::byte, (kRecv + kSend) * kMessageSlot> bytes_{};
  MemoryRegion mr_;  // declared after the bytes it registers: deregistered first
  uint32_t next_send_ = 0;
};

}  // namespace rrs::verbs
