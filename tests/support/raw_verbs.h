// Raw rdmacm ends for the hostile-peer tests over verbs: a client that
// connects with any private data and SENDs any bytes (RawVerbsPeer), and a
// listener that answers VerbsTableReader with scripted private data and
// messages (ScriptedVerbsServer). Built on librdmacm/libibverbs directly,
// not on the code under test, with a deadline on every wait so a misbehaving
// peer fails the test instead of hanging it.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/transport/verbs/owners.h"
#include "proto/control.h"
#include "tests/support/server_loop.h"  // verbs_address, RRS_SKIP_WITHOUT_VERBS

namespace rrs::test {

// One RC QP on a cm_id with message buffers: receive slots (posted unless
// told not to), a send slot, and a read buffer; what both raw ends use.
// Receive slots are bigger than control::kMaxVerbsMessage so an oversized
// message from the other side is seen whole here.
class MessageQp {
 public:
  static constexpr size_t kSlot = 1024;
  static constexpr uint32_t kRecvSlots = 4;
  static constexpr size_t kReadMax = 4096;
  static_assert(kSlot > control::kMaxVerbsMessage);

  MessageQp() = default;
  ~MessageQp();
  MessageQp(const MessageQp&) = delete;
  MessageQp& operator=(const MessageQp&) = delete;

  // `id` must outlive this object (destroy it first).
  Status create(rdma_cm_id* id, bool post_recvs);
  // SENDs `bytes` (at most kSlot) and waits for its completion.
  Status send(std::string_view bytes, std::chrono::milliseconds timeout);
  // The next message received, or why none came (timeout, a flushed QP).
  Result<std::string> receive(std::chrono::milliseconds timeout);
  // One RDMA READ of `length` (<= kReadMax) bytes; its completion status.
  Result<std::string> read(uint64_t addr, uint32_t rkey, uint32_t length,
                           std::chrono::milliseconds timeout);
  // A region the peer may READ (the scripted server's fake table).
  uint64_t exposed_addr() const { return reinterpret_cast<uint64_t>(exposed_.data()); }
  uint32_t exposed_rkey() const { return exposed_mr_ ? exposed_mr_->rkey : 0; }
  void fill_exposed(std::string_view bytes);

 private:
  // Takes completions until `done()` or the deadline: messages go to the
  // inbox, send/READ results to `results_` by wr_id.
  void pump(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);
  bool post_recv(uint32_t slot);
  Status post_send(ibv_send_wr& wr, std::chrono::milliseconds timeout);

  // Creation order; destroyed in reverse (QP, MRs, CQ, PD).
  verbs::ProtectionDomain pd_;
  verbs::CompletionQueue cq_;
  std::vector<std::byte> buf_ = std::vector<std::byte>((kRecvSlots + 1) * kSlot + kReadMax);
  std::vector<std::byte> exposed_ = std::vector<std::byte>(kReadMax);
  verbs::MemoryRegion mr_, exposed_mr_;
  verbs::QueuePair qp_;
  uint64_t next_wr_id_ = 1;
  std::deque<std::string> inbox_;
  std::map<uint64_t, ibv_wc_status> results_;
  std::string broken_;  // a receive that failed (the QP was flushed)
};

struct RawPeerOptions {
  bool post_recvs = true;       // false: the server's SENDs meet RNR
  uint8_t initiator_depth = 0;  // > 0: may issue RDMA READs
};

// A client that says whatever it is told to. connect() returns once rdmacm
// reported the server's answer: ESTABLISHED (with the accept's private data),
// REJECTED (with the reject's), or another event.
class RawVerbsPeer {
 public:
  enum class Outcome { kEstablished, kRejected, kOther };
  using Options = RawPeerOptions;
  static Result<std::unique_ptr<RawVerbsPeer>> connect(const Endpoint& server,
                                                       std::string_view private_data,
                                                       Options options,
                                                       std::chrono::milliseconds timeout);
  // Connects with a well-formed HELLO (this peer's nonce in client_nonce()).
  static Result<std::unique_ptr<RawVerbsPeer>> connect_hello(const Endpoint& server,
                                                             Options options = {});
  ~RawVerbsPeer();

  Outcome outcome() const { return outcome_; }
  const std::string& event_name() const { return event_name_; }
  // The accept's or the reject's private data (zero padding included).
  const std::string& answer() const { return answer_; }
  const control::Nonce& client_nonce() const { return nonce_; }
  MessageQp& qp() { return qp_; }
  // True if the server disconnected us (RDMA_CM_EVENT_DISCONNECTED) in time.
  bool wait_disconnected(std::chrono::milliseconds timeout);
  // CM events wait_disconnected() passed over, for failure messages.
  std::string other_events() const { return other_events_.empty() ? "none" : other_events_; }

 private:
  RawVerbsPeer() = default;
  Result<verbs::CmEvent> next_event(std::chrono::milliseconds timeout);

  Outcome outcome_ = Outcome::kOther;
  std::string event_name_, answer_;
  control::Nonce nonce_{};
  bool disconnected_ = false;
  std::string other_events_;
  // Creation order; destroyed in reverse.
  verbs::EventChannel channel_;
  verbs::CmId id_;
  MessageQp qp_;
};

// A verbs listener on its own thread that answers every CONNECT_REQUEST as
// `on_connect` says and then runs `after_established` on the new connection
// (on the listener's thread; one connection at a time).
class ScriptedVerbsServer {
 public:
  struct Answer {
    enum class Kind { kAccept, kReject, kIgnore } kind = Kind::kAccept;
    std::string private_data;
  };
  struct Connection {
    std::string connect_data;  // the client's HELLO private data
    MessageQp qp;
    // Waits until the server is stopped (a peer that never answers).
    std::function<void()> hold;
    // Hangs up (rdma_disconnect).
    std::function<void()> disconnect;
  };
  using OnConnect = std::function<Answer(const std::string& connect_data)>;
  using AfterEstablished = std::function<void(Connection&)>;

  ScriptedVerbsServer(OnConnect on_connect, AfterEstablished after_established = {});
  ~ScriptedVerbsServer();
  // An error here fails the test that set the server up.
  const Status& status() const { return status_; }
  Endpoint endpoint() const { return {verbs_address(), port_}; }
  int connect_requests() const { return connect_requests_.load(); }

 private:
  void run();
  void on_connect_request(rdma_cm_id* id, const rdma_conn_param& param);

  OnConnect on_connect_;
  AfterEstablished after_;
  Status status_;
  uint16_t port_ = 0;
  int stop_fd_ = -1;  // an eventfd: readable once the destructor wants the thread gone
  std::atomic<int> connect_requests_{0};
  struct Accepted {
    verbs::CmId id;
    std::unique_ptr<Connection> conn;  // its QP goes before its id
  };
  // Creation order; destroyed in reverse (connections, listener, channel).
  verbs::EventChannel channel_;
  verbs::CmId listen_id_;
  std::vector<verbs::CmId> ignored_;
  std::map<rdma_cm_id*, Accepted> accepted_;
  std::thread thread_;
};

}  // namespace rrs::test
