// TableServer over RDMA (rdmacm + one-sided READ). The table of each epoch is
// registered for remote READ only, and each client reads it under the rkeys
// its Protection gives it (verbs/protection.h). A client's CONNECT_REQUEST carries HELLO
// in its private data and the accept answers with HELLO_OK, then DESCRIPTOR
// (address, rkey, length, epoch): in the accept itself without a shared
// secret, or with one, as a SEND once the client's AUTH (a SEND on the new
// connection) has been checked. What to answer is each connection's
// ServerSession's decision (control_session.h); this moves bytes and memory.
// After that the server's CPU does nothing per byte: clients READ directly.
// The only messages are keepalives (RDMA has no transport keepalive): each
// client SENDs one per interval, and the server drops a client it has not
// heard from for kKeepaliveMisses intervals, so a vanished client cannot pin
// a retired epoch or a connection slot. The server takes no completion
// events: once per interval one timer sweeps every client's CQ, answers its
// keepalive and drops the silent ones, so however many clients read, the
// server wakes once per interval. Under the PD-per-client fallback a
// client's own copy of the table is registered on a worker thread
// (verbs/registration_worker.h), and its AUTH answered when that is done.
//
// Driven by the caller's libevent loop (every method on that thread): the CM
// event channel is a non-blocking fd, drained until EAGAIN on each wakeup.
#pragma once

#include <event2/event.h>

#include <chrono>
#include <map>
#include <memory>

#include "common/net/endpoint.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"
#include "common/transport/verbs/owners.h"
#include "common/transport/verbs/protection.h"
#include "common/transport/verbs/registration_worker.h"
#include "common/transport/verbs/server_connection.h"

namespace rrs {

struct VerbsServerLimits {
  uint32_t max_in_flight = 16;  // READs a client may keep outstanding
  // How long a replaced epoch stays registered for clients still reading it.
  std::chrono::seconds retire_grace{60};
  // An epoch still being written is registered in prefixes at least this
  // far ahead of the writer (verbs::prefix_to_register); tests make it small.
  uint64_t grow_step = uint64_t{64} << 20;
  // How often clients must send a keepalive (announced in HELLO_OK).
  std::chrono::milliseconds keepalive_interval{2000};
  AccessPolicy access;
  // Whether the published table may be handed out (ServerTerms::demand).
  TableDemand* demand = nullptr;
  // Tests only: act as if the device had no type-2 memory windows, so the
  // protection-domain-per-client fallback runs on rxe (which has them).
  // rdma-server sets it from $RRS_TEST_NO_MEMORY_WINDOWS=1, with a warning.
  bool test_no_memory_windows = false;
  // Tests only: act as if RLIMIT_MEMLOCK were this many bytes (and the
  // process had no CAP_IPC_LOCK) when checking what kPdPerClient would pin.
  uint64_t test_memlock_limit = 0;
  // Tests only: each kPdPerClient registration of a client's own copy takes
  // this much longer, where it runs. rdma-server sets it from
  // $RRS_TEST_PD_REGISTRATION_DELAY_MS, with a warning.
  std::chrono::milliseconds test_registration_delay{0};
};

class VerbsTableServer final : public TableServer {
 public:
  // How a client is kept to rkeys of its own (verbs/protection.h). Decided
  // once per device (the first time it is used) and logged then.
  using Protection = verbs::Protection;

  // Binds and listens on `at` (an address of an RDMA-capable interface, or
  // 0.0.0.0). Fails with a clear reason when there is no RDMA device.
  static Result<std::unique_ptr<VerbsTableServer>> listen(event_base* base, const Endpoint& at,
                                                          const VerbsServerLimits& limits = {});
  ~VerbsTableServer() override;

  Status publish(TablePtr table) override;
  bool streams() const override { return true; }
  std::string address() const override { return bound_.to_string(); }
  void disconnect_all() override;
  size_t client_count() const override { return connections_.size(); }
  size_t table_readers(uint64_t epoch) const override {
    size_t n = 0;
    for (const auto& [id, c] : connections_) n += c->session.holds_table(epoch) ? 1 : 0;
    return n;
  }

 private:
  // tests/transport/verbs_protection_test.cc, verbs_registration_test.cc
  friend class VerbsTableServerTestPeer;
  using Connection = verbs::ServerConnection;

  VerbsTableServer(event_base* base, const VerbsServerLimits& limits)
      : base_(base),
        limits_(limits),
        terms_{limits.access, limits.max_in_flight, limits.keepalive_interval, limits.demand},
        registry_(limits.access.secret.has_value(), limits.test_no_memory_windows,
                  limits.grow_step) {}

  // table_server.cc: connection management (CM events) and epochs.
  Status start_listening(const Endpoint& at);
  static void on_cm_readable(evutil_socket_t, short, void* arg);
  static void on_retire_timer(evutil_socket_t, short, void* arg);
  void handle(rdma_cm_event& ev);
  void on_connect_request(rdma_cm_id* id, const rdma_conn_param& param);
  // table_server_grants.cc: the accept: HELLO_OK (and the descriptor
  // without a secret), and the READ depth we grant.
  bool accept(Connection& c, const verbs::Registration& r, const control::HelloOk& hello,
              const rdma_conn_param& param);
  void reject(rdma_cm_id* id, const Refusal& r);
  void drop(rdma_cm_id* id, const char* reason);
  // Disconnects a client we give up on, then drops it (see early_drops_).
  void hang_up(rdma_cm_id* id, const char* reason);
  // Gives up on a connection that failed while being set up.
  void drop_new(std::unique_ptr<Connection> c, const char* step);
  // Whether a new connection may start its handshake (or, without a
  // secret, take a slot): the access policy's budgets, or why not.
  std::optional<Refusal> admit(const Connection& c, const std::string& host) const;
  // Under kPdPerClient: whether RLIMIT_MEMLOCK covers pinning `r` once more.
  std::optional<Refusal> check_pinning(const verbs::Registration& r) const;
  // The device's PD, or under kPdPerClient one of the client's own.
  Result<ibv_pd*> pd_for_client(Connection& c, const verbs::Registration& r);
  // An authenticated client's access to `r` and AUTH_OK: at once, or under
  // kPdPerClient once its own copy is registered off the loop
  // (on_registered). Why the connection must go, or "".
  std::string grant(Connection& c, const verbs::Registration& r,
                    const control::Proof& server_proof);
  std::string send_auth_granted(Connection& c, const control::Proof& server_proof,
                                const control::Descriptor& d);
  void on_registered(verbs::RegistrationWorker::Done done);
  size_t registrations_in_flight() const { return worker_ ? worker_->in_flight() : 0; }
  void prune_retired();

  // table_server_messages.cc: the clients' messages, keepalives and sweeps.
  static void on_keepalive_timer(evutil_socket_t, short, void* arg);
  static void on_handshake_timer(evutil_socket_t, short, void* arg);
  // Takes the client's completions and answers its messages; why the
  // connection must go, or "" if it may stay.
  std::string take_completions(Connection& c);
  std::string take_message(Connection& c, const ibv_wc& wc);
  std::string answer_keepalive(Connection& c, uint64_t seq);
  std::string answer_auth(Connection& c, const control::Proof& server_proof);
  // Sends an ERROR, then disconnects once it is out (or after kCloseGrace).
  void close_with(Connection& c, const Refusal& r);
  void sweep();
  // Polls the connections still in their handshake (or closing) every
  // kHandshakePoll, so AUTH is answered at once, not at the next keepalive sweep.
  void sweep_handshakes();
  void arm_handshake_timer();

  // table_server_growth.cc: an epoch still being written, registered in
  // growing prefixes (verbs::prefix_to_register) as the writer goes, each
  // of its clients sent the grown descriptor. Every kGrowPoll while it lasts.
  static void on_grow_timer(evutil_socket_t, short, void* arg);
  void grow_streamed();
  // Sends `c` the grown descriptor of `r` (with a window onto it under
  // kWindowPerClient), unless it has it; why the connection must go, or "".
  std::string tell_grown(Connection& c, const verbs::Registration& r);
  // The epoch being written is replaced by `next` (it broke off, or a newer
  // one came): it will never be complete, so its readers are told "epoch
  // gone" and let go, rather than kept waiting on a registration's grace.
  void withdraw_streamed(uint64_t next);
  // Under kPdPerClient an epoch is served once complete (each client would
  // register every prefix again in its own PD).
  // Why `t` may not be served yet to clients on `device`, if it may not.
  std::optional<Refusal> refuse_streamed(ibv_context* device, const Table& t);

  event_base* base_;
  VerbsServerLimits limits_;
  ServerTerms terms_;  // what every client's ServerSession offers
  Endpoint bound_;
  TablePtr current_;
  // Declared in creation order; destroyed in reverse (connections first,
  // event channel last), as rdma-core's examples clean up.
  verbs::EventChannel channel_;
  verbs::CmId listen_id_;
  verbs::EpochRegistry registry_;  // PDs, protection, registrations
  std::map<rdma_cm_id*, std::unique_ptr<Connection>> connections_;
  uint64_t last_serial_ = 0;  // the last Connection::serial given
  // cm_ids of clients dropped before their ESTABLISHED (a client may SEND
  // before its RTU reaches our CM): rdma_disconnect sends no DREQ then, and
  // destroying the id sends a REJ, which a client that is established by its
  // own lights does not take for a disconnect. So they are disconnected when
  // ESTABLISHED comes, or go with the CM's error if it never does. Their
  // QPs, CQs and buffers are gone already. At most verbs::kMaxEarlyDrops.
  std::map<rdma_cm_id*, verbs::CmId> early_drops_;
  std::unique_ptr<event, void (*)(event*)> cm_event_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> retire_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> keepalive_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> handshake_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> grow_timer_{nullptr, event_free};
  // kPdPerClient: started at the first client's AUTH; stopped (joined) first
  // in the destructor.
  std::unique_ptr<verbs::RegistrationWorker> worker_;
};

}  // namespace rrs
