// TableReader over RDMA: rdmacm connects (HELLO in the private data; the
// accept's carries HELLO_OK, and the descriptor unless the server wants AUTH,
// which is then one SEND each way on the new connection), then every read is a one-sided RDMA READ from
// the server's registered table into a locally registered buffer. Reads are
// posted as chains with selective signaling: only every kSignalEvery-th WR
// and the last of each batch ask for a completion, and since an RC QP
// completes in order, one completion retires every WR posted before it.
//
// Single-threaded, no event loop: poll() sleeps on the completion channel's
// and the CM channel's fds (no busy-waiting).
//
// Keepalive: the server cannot see one-sided READs, so the reader SENDs a
// KEEPALIVE every interval the server announced (from poll() while reading,
// from keepalive() while the caller waits for something else) and expects
// each to be answered; a server silent for kKeepaliveMisses intervals is
// declared gone.
#pragma once

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/net/endpoint.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"
#include "common/transport/verbs/owners.h"

namespace rrs {

class VerbsTableReader final : public TableReader {
 public:
  static constexpr uint32_t kSignalEvery = 4;
  static constexpr uint32_t kMaxSendWr = 64;
  static_assert(kMaxSendWr >= 2 * kSignalEvery);

  // With a `secret`, the server must ask for it and prove it holds it too.
  VerbsTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                   std::optional<std::string> secret = std::nullopt);
  ~VerbsTableReader() override;

  Status connect(Clock::time_point deadline) override;
  const control::Descriptor& descriptor() const override { return session_.descriptor(); }
  uint32_t max_read_length() const override { return max_read_len_; }
  uint32_t max_in_flight() const override { return max_in_flight_; }
  Status register_buffer(std::span<std::byte> memory) override;
  void unregister_buffer(std::span<std::byte> memory) override;
  Status post_reads(std::span<const TableRead> batch) override;
  Status poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) override;
  Status keepalive() override;

  // Tests only: read under other rkeys than the server gave us (to show that
  // another client's window does not work from this QP).
  void use_rkeys_for_test(uint32_t rkey, uint32_t log_rkey) {
    session_.descriptor_for_test().rkey = rkey;
    session_.descriptor_for_test().log_rkey = log_rkey;
  }
  // Tests only: the QP, to see what the connection set it to (ibv_query_qp).
  ibv_qp* qp_for_test() const { return qp_.get(); }

 private:
  // Work requests on the send queue, oldest first: READs and keepalive SENDs.
  static constexpr uint64_t kKeepaliveWrId = (uint64_t{1} << 63) - 1;
  static constexpr uint64_t kAuthWrId = (uint64_t{1} << 63) - 2;
  // Receive WRs are told apart from sends by this bit in wr_id (READ ids are small).
  static constexpr uint64_t kRecvWrBit = uint64_t{1} << 63;
  static constexpr uint32_t kRecvSlots = 2;
  static constexpr size_t kMsgSlot = control::kMaxVerbsMessage;
  struct Outstanding {
    uint64_t id;
    bool signaled;
  };
  // Takes every completion already queued, without waiting: finished READs
  // go to `done`, keepalive answers are noted.
  Status reap(std::vector<uint64_t>& done);
  Status fail(std::string why);
  // Sends a keepalive if one is due; fails if the last one went unanswered too long.
  Status tick();
  bool post_recv(uint32_t slot);
  // SENDs one message (from the one send slot: a keepalive or AUTH, never
  // both at once); ibv_post_send's result.
  int post_message(const std::string& msg, uint64_t wr_id);
  Status attempt(Clock::time_point deadline, bool& retryable);
  // AUTH as one SEND, then the server's one answer: AUTH_OK + DESCRIPTOR, or an ERROR.
  Status authenticate(const control::Proof& proof, Clock::time_point deadline);
  // The server's one answer to our AUTH SEND (before any READ is posted).
  Result<std::string> receive_auth_answer(Clock::time_point deadline);
  Result<verbs::CmEvent> wait_cm_event(rdma_cm_event_type want, std::chrono::milliseconds timeout,
                                       bool& retryable);
  Status check_cm_channel();
  // Moves the QP to the error state and collects the flushed WRs, so the QP
  // can be destroyed with nothing in flight (two-phase teardown).
  void drain();
  void close();
  uint32_t lkey_for(const std::byte* p, size_t len) const;

  Endpoint server_;
  std::chrono::milliseconds io_timeout_;
  ClientSession session_;
  uint32_t max_read_len_ = 0;
  uint32_t max_in_flight_ = 0;
  uint32_t posted_since_signal_ = 0;
  std::deque<Outstanding> outstanding_;
  size_t reads_outstanding_ = 0;
  std::vector<uint64_t> reaped_early_;  // READs found done by keepalive()

  std::chrono::milliseconds keepalive_interval_{0};  // 0: the server wants none
  uint64_t keepalive_seq_ = 0;       // last sent
  uint64_t keepalive_acked_ = 0;     // last answered
  Clock::time_point keepalive_sent_at_{};
  Clock::time_point heard_at_{};     // connect or last answer
  bool broken_ = false;
  std::vector<std::span<std::byte>> registered_spans_;  // re-registered after a reconnect

  // Creation order; destroyed in reverse (MRs first, event channel last).
  verbs::EventChannel channel_;
  verbs::CmId id_;
  verbs::ProtectionDomain pd_;
  verbs::CompletionChannel comp_channel_;
  verbs::CompletionQueue cq_;
  std::array<std::byte, (kRecvSlots + 1) * kMsgSlot> msgs_{};  // receive slots, then the send slot
  verbs::MemoryRegion msgs_mr_;
  verbs::QueuePair qp_;
  std::vector<verbs::MemoryRegion> mrs_;
};

}  // namespace rrs
