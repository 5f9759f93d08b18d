// TableServer over RDMA (rdmacm + one-sided READ). The table of each epoch is
// registered for remote READ only, and each client reads it under the rkeys
// its Protection gives it (below). A client's CONNECT_REQUEST carries HELLO
// in its private data and the accept answers with HELLO_OK, then DESCRIPTOR
// (address, rkey, length, epoch): in the accept itself without a shared
// secret, or with one, as a SEND once the client's AUTH (a SEND on the new
// connection) has been checked.
// After that the server's CPU does nothing per byte: clients READ directly.
// The only messages are keepalives (RDMA has no transport keepalive): each
// client SENDs one per interval, and the server drops a client it has not
// heard from for kKeepaliveMisses intervals, so a vanished client cannot pin
// a retired epoch or a connection slot. The server takes no completion
// events: once per interval one timer sweeps every client's CQ, answers its
// keepalive and drops the silent ones, so however many clients read, the
// server wakes once per interval.
//
// Driven by the caller's libevent loop (every method on that thread): the CM
// event channel is a non-blocking fd, drained until EAGAIN on each wakeup.
#pragma once

#include <event2/event.h>

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <memory>
#include <vector>

#include "common/net/endpoint.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"
#include "common/transport/verbs/owners.h"

namespace rrs {

struct VerbsServerLimits {
  uint32_t max_in_flight = 16;  // READs a client may keep outstanding
  // How long a replaced epoch stays registered for clients still reading it.
  std::chrono::seconds retire_grace{60};
  // How often clients must send a keepalive (announced in HELLO_OK).
  std::chrono::milliseconds keepalive_interval{2000};
  AccessPolicy access;
  // Tests only: act as if the device had no type-2 memory windows, so the
  // protection-domain-per-client fallback runs on rxe (which has them).
  // rdma-server sets it from $RRS_TEST_NO_MEMORY_WINDOWS=1, with a warning.
  bool test_no_memory_windows = false;
};

class VerbsTableServer final : public TableServer {
 public:
  // How a client is kept to rkeys of its own. Decided once per device (the
  // first time it is used) and logged then.
  enum class Protection {
    // No shared secret: one MR per epoch, IBV_ACCESS_REMOTE_READ; every
    // client of the epoch gets its rkey, which dies when the epoch retires.
    kSharedMr,
    // A secret and type-2 memory windows: the epoch's MR grants nothing
    // remote (IBV_ACCESS_MW_BIND only); after AUTH two windows (table, log)
    // are bound to the client's QP, so their rkeys work only from that QP and
    // die with the client or the epoch.
    kWindowPerClient,
    // A secret and no type-2 windows: each client's QP lives in a protection
    // domain of its own, and after AUTH the epoch's table and log are
    // registered again in it (remote READ): the same guarantees as windows,
    // but every client pins the table once more, so registration time and
    // locked memory grow with table size times clients. A fallback.
    kPdPerClient,
  };

  // Binds and listens on `at` (an address of an RDMA-capable interface, or
  // 0.0.0.0). Fails with a clear reason when there is no RDMA device.
  static Result<std::unique_ptr<VerbsTableServer>> listen(event_base* base, const Endpoint& at,
                                                          VerbsServerLimits limits = {});
  ~VerbsTableServer() override;

  Status publish(TablePtr table) override;
  std::string address() const override { return bound_.to_string(); }
  void disconnect_all() override;
  size_t client_count() const override { return connections_.size(); }

 private:
  friend class VerbsTableServerTestPeer;  // tests/unit/verbs_protection_test.cc

  // One registration of one epoch's table on one device.
  struct Registration {
    TablePtr table;
    ibv_context* device = nullptr;
    Protection protection = Protection::kSharedMr;
    // In the device's shared PD: remote READ (kSharedMr) or MW_BIND only
    // (kWindowPerClient). None under kPdPerClient: each client registers its own.
    verbs::MemoryRegion mr;
    // The change log continuing the table, if any: registered with each
    // epoch that shares it (one memory, several MRs), so a follower keeps
    // reading it under its epoch's rkey and, once that epoch retires,
    // reconnects to find the same log under the new one.
    verbs::MemoryRegion log_mr;
    Clock::time_point retired_at{};  // zero while current
  };
  // What one authenticated client reads its epoch through, unless the epoch's
  // rkeys are shared (kSharedMr). Dropped when the client goes or the epoch
  // retires (before the registration and the client's QP and PD).
  struct Grant {
    TablePtr table;  // the memory the MRs below pin; released after them
    // kPdPerClient: the table and log registered in the client's own PD.
    verbs::MemoryRegion table_mr, log_mr;
    // kWindowPerClient: type-2 windows onto the registration's MRs, bound to
    // the client's QP (dropped first, as windows must be).
    verbs::MemoryWindow table_window, log_window;
  };
  // Message buffers (AUTH, keepalives and their answers): receive slots, then
  // send slots, one MR (local access only).
  static constexpr size_t kMsgSlot = control::kMaxVerbsMessage;
  static constexpr uint32_t kRecvSlots = 4, kSendSlots = 4;
  static_assert(control::kKeepaliveMessageSize <= kMsgSlot);
  struct Connection {
    explicit Connection(const ServerTerms& terms) : session(terms) {}
    VerbsTableServer* server = nullptr;
    // Creation order; destroyed in reverse (grant, QP, MR, CQ, PD, id).
    verbs::CmId id;
    // kPdPerClient: the PD of this client's QP, message buffers and grant,
    // shared with no other client (else the QP uses the device's PD).
    verbs::ProtectionDomain own_pd;
    verbs::CompletionQueue cq;
    std::array<std::byte, (kRecvSlots + kSendSlots) * kMsgSlot> msgs{};
    verbs::MemoryRegion msgs_mr;
    verbs::QueuePair qp;
    std::optional<Grant> grant;
    uint64_t epoch = 0;
    std::string peer;
    Clock::time_point last_heard;
    uint32_t sends_in_flight = 0;
    uint32_t next_send_slot = 0;
    // The handshake: until session.ready(), the client knows no rkey.
    ServerSession session;
    Clock::time_point connected_at;
    // Told why it must go (an ERROR SEND); disconnected once that is out.
    std::optional<Clock::time_point> closing_since;
    // rdma_cm said ESTABLISHED (the client's RTU came). A client may SEND
    // before that: its QP is up as soon as it has our accept.
    bool established = false;
  };

  VerbsTableServer(event_base* base, VerbsServerLimits limits)
      : base_(base),
        limits_(limits),
        terms_{limits.access, limits.max_in_flight, limits.keepalive_interval} {}
  static void on_cm_readable(evutil_socket_t, short, void* arg);
  static void on_retire_timer(evutil_socket_t, short, void* arg);
  static void on_keepalive_timer(evutil_socket_t, short, void* arg);
  static void on_handshake_timer(evutil_socket_t, short, void* arg);
  // Sets up the connection's CQ, QP and keepalive buffers; false after logging.
  bool prepare(Connection& c, ibv_pd* pd);
  bool post_recv(Connection& c, uint32_t slot);
  // Takes the client's completions and answers its keepalives; why the
  // connection must go, or "" if it may stay.
  std::string take_completions(Connection& c);
  std::string answer_keepalive(Connection& c, uint64_t seq);
  std::string answer_auth(Connection& c, const control::Proof& server_proof);
  // Posts one message from a send slot; false when none is free or the post fails.
  bool send_message(Connection& c, const std::string& msg);
  // Sends an ERROR, then disconnects once it is out (or after a second).
  void close_with(Connection& c, const Refusal& r);
  control::Descriptor descriptor_for(const Registration& r) const;
  // Gives an authenticated client its own rkeys onto `r`, as r.protection
  // says, and puts them in `d` (kSharedMr: `d` has the epoch's already).
  Status grant_access(Connection& c, const Registration& r, control::Descriptor& d);
  // kWindowPerClient: binds the client's windows onto `r` (BIND_MW work
  // requests ahead of the SEND that reveals their rkeys).
  Status bind_windows(Connection& c, const Registration& r, control::Descriptor& d);
  // kPdPerClient: registers r's table and log in the client's own PD.
  Status register_for_client(Connection& c, const Registration& r, control::Descriptor& d);
  // The protection for clients on `device`: decided and logged on first use.
  Protection protection_for(ibv_context* device);
  void sweep();
  // Polls the connections still in their handshake (or closing) every few ms,
  // so AUTH is answered at once, not at the next keepalive sweep.
  void sweep_handshakes();
  void arm_handshake_timer();
  void handle(rdma_cm_event& ev);
  void on_connect_request(rdma_cm_id* id, const rdma_conn_param& param);
  void reject(rdma_cm_id* id, const Refusal& r);
  void drop(rdma_cm_id* id, const char* reason);
  // Disconnects a client we give up on, then drops it (see early_drops_).
  void hang_up(rdma_cm_id* id, const char* reason);
  // Gives up on a connection that failed while being set up.
  void drop_new(std::unique_ptr<Connection> c, const char* step);
  // The device's PD, shared by every client except under kPdPerClient.
  Result<ibv_pd*> pd_for(ibv_context* device);
  Result<const Registration*> registration_for(ibv_context* device);
  void prune_retired();

  event_base* base_;
  VerbsServerLimits limits_;
  ServerTerms terms_;  // what every client's ServerSession offers
  Endpoint bound_;
  TablePtr current_;
  // Declared in creation order; destroyed in reverse (connections first,
  // event channel last), as rdma-core's examples clean up.
  verbs::EventChannel channel_;
  verbs::CmId listen_id_;
  std::map<ibv_context*, verbs::ProtectionDomain> pds_;
  std::map<ibv_context*, Protection> protection_;
  std::vector<Registration> registrations_;
  std::map<rdma_cm_id*, std::unique_ptr<Connection>> connections_;
  // cm_ids of clients dropped before their ESTABLISHED (a client may SEND
  // before its RTU reaches our CM): rdma_disconnect sends no DREQ then, and
  // destroying the id sends a REJ, which a client that is established by its
  // own lights does not take for a disconnect. So they are disconnected when
  // ESTABLISHED comes, or go with the CM's error if it never does. Their
  // QPs, CQs and buffers are gone already.
  static constexpr size_t kMaxEarlyDrops = 1024;
  std::map<rdma_cm_id*, verbs::CmId> early_drops_;
  std::unique_ptr<event, void (*)(event*)> cm_event_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> retire_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> keepalive_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> handshake_timer_{nullptr, event_free};
};

}  // namespace rrs
