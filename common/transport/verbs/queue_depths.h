// Every verbs sizing knob of both sides, named, with why, and the invariants
// between them asserted (as eRPC does for its queue depths).
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "proto/control.h"

namespace rrs::verbs {

// Every message (AUTH, its answer, keepalives, ERROR) fits one slot, and
// every receive buffer is one slot.
inline constexpr size_t kMessageSlot = control::kMaxVerbsMessage;
static_assert(control::kKeepaliveMessageSize <= kMessageSlot);

// --- Client ------------------------------------------------------------------
// Only every kSignalEvery-th READ (and the last of a batch) asks for a
// completion: an RC QP completes in order, so one retires all before it.
inline constexpr uint32_t kSignalEvery = 4;
// READs the send queue holds; max_in_flight is capped to it.
inline constexpr uint32_t kMaxReadWr = 64;
static_assert(kMaxReadWr >= 2 * kSignalEvery);
// Receive slots for KEEPALIVE_ACK (one keepalive is outstanding at a time),
// the AUTH answer and a streamed epoch's grown descriptors (sent unasked;
// one arriving with every slot taken waits in RNR retries, never lost); one
// send slot (AUTH, then keepalives: never both).
inline constexpr uint32_t kClientRecvSlots = 4, kClientSendSlots = 1;
// The send queue: the READs plus one control SEND (AUTH or a keepalive).
inline constexpr uint32_t kClientSendWr = kMaxReadWr + kClientSendSlots;
// RDMA READs we ask to keep outstanding (initiator depth), further capped by
// the device's max_qp_init_rd_atom and by what the server grants.
inline constexpr uint8_t kInitiatorDepthCap = 16;
// rdma_resolve_addr / rdma_resolve_route: each step's own timeout.
inline constexpr int kResolveTimeoutMs = 2000;
// Transport and RNR retries of the connection: 7 is the most IB allows (and
// for RNR it means "retry forever"), so a busy server's RECV queue or a lost
// packet costs time, never the connection. A dead server is found by the
// keepalive instead.
inline constexpr uint8_t kRetryCount = 7, kRnrRetryCount = 7;
// Two-phase teardown: how long to wait for the flushed WRs of an errored QP.
inline constexpr std::chrono::seconds kDrainTimeout{1};
// Completions taken per ibv_poll_cq call.
inline constexpr int kPollBatch = 16;

inline constexpr ibv_qp_cap client_qp_caps() {
  return {.max_send_wr = kClientSendWr,
          .max_recv_wr = kClientRecvSlots,
          .max_send_sge = 1,
          .max_recv_sge = 1,
          .max_inline_data = 0};
}
// The CQ takes every send and receive completion.
inline constexpr int kClientCqDepth = static_cast<int>(kClientSendWr + kClientRecvSlots);

// --- Server ------------------------------------------------------------------
// Receive slots for a client's AUTH and keepalives (a client keeps one
// keepalive outstanding; the spares cover a sweep that comes late), and send
// slots for the answers and window BINDs (at most two BINDs + AUTH_OK at once).
inline constexpr uint32_t kServerRecvSlots = 4, kServerSendSlots = 4;
static_assert(kServerSendSlots >= 3);

inline constexpr ibv_qp_cap server_qp_caps() {
  return {.max_send_wr = kServerSendSlots,
          .max_recv_wr = kServerRecvSlots,
          .max_send_sge = 1,
          .max_recv_sge = 1,
          .max_inline_data = 0};
}
inline constexpr int kServerCqDepth = static_cast<int>(kServerSendSlots + kServerRecvSlots);
// rdma_listen's backlog: connect requests not yet taken off the CM channel.
// The loop drains the channel at each wakeup, so this only covers a burst.
inline constexpr int kListenBacklog = 64;
// While a client is in its handshake (or being told why it must go), its CQ
// is polled this often, so AUTH is answered at once, not at the next sweep.
inline constexpr std::chrono::milliseconds kHandshakePoll{5};
// While an epoch is being written, how often its registration is checked
// against the writer (and grown, and its clients told).
inline constexpr std::chrono::milliseconds kGrowPoll{10};
// A client told why it must go is disconnected once that SEND is out, or after this.
inline constexpr std::chrono::seconds kCloseGrace{1};
// cm_ids of clients dropped before ESTABLISHED, kept to disconnect later
// (VerbsTableServer::early_drops_); beyond this they are disconnected at once.
inline constexpr size_t kMaxEarlyDrops = 1024;

}  // namespace rrs::verbs
