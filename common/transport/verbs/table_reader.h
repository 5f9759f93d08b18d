// TableReader over RDMA: rdmacm connects (HELLO in the private data; the
// accept's carries HELLO_OK, and the descriptor unless the server wants AUTH,
// which is then one SEND each way on the new connection), then every read is a one-sided RDMA READ
// from the server's registered table into a locally registered buffer. Reads are posted as chains
// with selective signaling: only every kSignalEvery-th WR and the last of each batch ask for a
// completion, and since an RC QP completes in order, one completion retires every WR posted before
// it.
//
// Single-threaded, no event loop: poll() sleeps on the completion channel's
// and the CM channel's fds (no busy-waiting; verbs/completion_wait.h). The
// handshake's rules are ClientSession's (control_session.h); the data path
// is verbs/read_queue.h.
//
// An epoch still being written is registered by the server in growing
// prefixes, each announced by a DESCRIPTOR message it sends unasked; a READ
// past the prefix waits for the next one (await_readable).
//
// Keepalive: the server cannot see one-sided READs, so the reader SENDs a
// KEEPALIVE every interval the server announced (from poll() while reading,
// from keepalive() while the caller waits for something else) and expects
// each to be answered; a server silent for kKeepaliveMisses intervals is
// declared gone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/net/endpoint.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"
#include "common/transport/verbs/cm_client.h"
#include "common/transport/verbs/message_slots.h"
#include "common/transport/verbs/owners.h"
#include "common/transport/verbs/queue_depths.h"
#include "common/transport/verbs/read_queue.h"

namespace rrs {

class VerbsTableReader final : public TableReader {
 public:
  static constexpr uint32_t kSignalEvery = verbs::kSignalEvery;
  static constexpr uint32_t kMaxSendWr = verbs::kMaxReadWr;

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
  void set_log_only(bool on) override { session_.set_log_only(on); }

  // Tests only: read under other rkeys than the server gave us (to show that
  // another client's window does not work from this QP).
  void use_rkeys_for_test(uint32_t rkey, uint32_t log_rkey) {
    session_.descriptor_for_test().rkey = rkey;
    session_.descriptor_for_test().log_rkey = log_rkey;
  }
  // Tests only: the QP, to see what the connection set it to (ibv_query_qp).
  ibv_qp* qp_for_test() const { return qp_.get(); }

 private:
  // table_reader.cc: setting up and tearing down a connection.
  Status attempt(Clock::time_point deadline);
  // PD, completion channel, CQ, message slots and QP on the resolved cm_id.
  Status create_resources();
  // AUTH as one SEND, then the server's one answer: AUTH_OK + DESCRIPTOR, or an ERROR.
  Status authenticate(const control::Proof& proof, Clock::time_point deadline);
  Result<std::string> receive_auth_answer(Clock::time_point deadline);
  void close();

  // table_reader_io.cc: the data path.
  // Takes every completion already queued, without waiting: finished READs
  // go to `done`, keepalive answers and grown descriptors are noted.
  Status reap(std::vector<uint64_t>& done);
  Status take_message(const ibv_wc& wc);
  // Waits until the table's first `end` bytes are readable (a streamed
  // epoch's registered prefix grows as the server writes it).
  Status await_readable(uint64_t end);
  Status fail(std::string why);
  // Sends a keepalive if one is due; fails if the last one went unanswered too long.
  Status tick();
  Status check_cm_channel();
  static uint32_t lkey_for(const void* self, const std::byte* p, size_t len);

  Endpoint server_;
  std::chrono::milliseconds io_timeout_;
  ClientSession session_;
  uint32_t max_read_len_ = 0;
  uint32_t max_in_flight_ = 0;
  verbs::ReadQueue queue_;
  std::vector<uint64_t> reaped_early_;  // READs found done by keepalive()

  std::chrono::milliseconds keepalive_interval_{0};  // 0: the server wants none
  uint64_t keepalive_seq_ = 0;                       // last sent
  uint64_t keepalive_acked_ = 0;                     // last answered
  Clock::time_point keepalive_sent_at_{};
  Clock::time_point heard_at_{};  // connect or last answer
  bool broken_ = false;
  std::vector<std::span<std::byte>> registered_spans_;  // re-registered after a reconnect

  // Creation order; destroyed in reverse (MRs first, event channel last).
  verbs::CmClient cm_;
  verbs::ProtectionDomain pd_;
  verbs::CompletionChannel comp_channel_;
  verbs::CompletionQueue cq_;
  verbs::MessageSlots<verbs::kClientRecvSlots, verbs::kClientSendSlots> msgs_;
  verbs::QueuePair qp_;
  std::vector<verbs::MemoryRegion> mrs_;
};

}  // namespace rrs
