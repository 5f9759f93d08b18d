// The control protocol's sessions (docs/control-protocol.md), one per
// connection, with no I/O: bytes of a message in, a decision out (the message
// to answer with, or a Refusal). TCP and verbs move the bytes; every rule of
// the handshake (versions, admission, AUTH, "not ready", the descriptor, READ
// ranges, what an ERROR means to a client) lives here, once.
//
//   server: ServerSession   HELLO -> HELLO_OK, AUTH -> AUTH_OK, descriptor, READ
//   client: ClientSession   HELLO_OK -> AUTH?, AUTH_OK, DESCRIPTOR, ERROR -> Status
//
// Over TCP each message is a frame body; over verbs HELLO comes in the
// connect private data and AUTH / KEEPALIVE as SEND messages after the
// accept (control.h, "The same frames over verbs").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/table/table.h"
#include "common/transport/transport.h"
#include "proto/control.h"

namespace rrs {

// How a server turns a request away: an ERROR with this code and text. The
// connection closes after it unless the code is kEpochGone. `tell` is false
// when the peer broke the message protocol of an established verbs
// connection: it is dropped without an answer (it is no rdma-client).
struct Refusal {
  control::ErrorCode code = control::ErrorCode::kInternal;
  std::string why;
  bool tell = true;
};

// A protocol step's outcome: the answer, or a Refusal. Not a Status: a
// refusal is what this server answers its peer (a wire code and text), not a
// failure of this process; the transport sends it and carries on.
template <typename T>
class [[nodiscard]] Verdict {
 public:
  Verdict(T value) : v_(std::move(value)) {}    // NOLINT: implicit by design
  Verdict(Refusal why) : v_(std::move(why)) {}  // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& operator*() { return std::get<T>(v_); }
  const T& operator*() const { return std::get<T>(v_); }
  T* operator->() { return &std::get<T>(v_); }
  const Refusal& refusal() const { return std::get<Refusal>(v_); }

 private:
  std::variant<T, Refusal> v_;
};

// Snapshots on demand (rdma-server): a transport asks, on its loop thread,
// before it hands the published table to a new client.
class TableDemand {
 public:
  virtual ~TableDemand() = default;
  // Nullopt when `table` (the one published; null while there is none) may
  // be given to a new client. Else the answer to send (kSnapshotPending
  // while one is being taken for it, kNotReady when taking one failed),
  // after asking for a snapshot if none is under way.
  virtual std::optional<Refusal> refuse(const TablePtr& table) = 0;
};

// What a server offers its clients; announced in HELLO_OK.
struct ServerTerms {
  AccessPolicy access;
  uint32_t max_in_flight = 16;
  // Verbs: how often a client must send KEEPALIVE. 0 over TCP (the kernel's keepalive).
  std::chrono::milliseconds keepalive_interval{0};
  // Decides whether the published table may be handed out (null: any
  // published table may; rdma-server's snapshots on demand set it).
  TableDemand* demand = nullptr;
};

// The server's half of one client's session. Loop thread only, like its connection.
class ServerSession {
 public:
  // Where the client is. A client learns nothing about the table before kReady.
  enum class State {
    kAwaitHello,  // connected, nothing said yet (TCP; verbs' HELLO comes with the request)
    kAwaitAuth,   // HELLO_OK said "AUTH required"; no proof yet
    kReady,       // may have the descriptor and READ
    kClosing,     // refused; nothing more is answered
  };

  explicit ServerSession(const ServerTerms& terms) : terms_(terms) {}

  // Admission to a slot, once the client has proved the secret (or, without
  // one, said HELLO): refused when `clients` (authenticated ones, this one
  // not counted) already fill max_clients.
  static std::optional<Refusal> admit(size_t clients, const AccessPolicy& access);
  // Admission of a new connection to its handshake: refused when `pending`
  // connections still in theirs (this one not counted), or `from_address` of
  // them from the same peer address, already fill their budgets.
  static std::optional<Refusal> admit_unauthenticated(size_t pending, size_t from_address,
                                                      const AccessPolicy& access);
  // The descriptor of `table` as either transport sends it (verbs adds the
  // addresses and rkeys), or "not ready" while there is none.
  static Verdict<control::Descriptor> describe(const TablePtr& table,
                                               control::TransportKind transport);
  // What this client may have of the published `table`: a client that
  // wants the table gets it if the terms' TableDemand lets it (else its
  // answer: "snapshot pending"...); a log-only client (HELLO flag) gets
  // the descriptor whatever the table, even one without bytes. Remembers
  // the epoch of a table handed out (holds_table).
  Verdict<control::Descriptor> offer(const TablePtr& table, control::TransportKind transport);

  // HELLO as a frame body (TCP) or the connect private data (verbs: HELLO
  // frame, padded): the HELLO_OK to answer with.
  Verdict<control::HelloOk> on_hello(std::span<const std::byte> body);
  Verdict<control::HelloOk> on_connect(std::span<const std::byte> private_data);
  // AUTH's body: the server's proof to send back in AUTH_OK.
  Verdict<control::Proof> on_auth(std::span<const std::byte> body);
  // GET_DESCRIPTOR (TCP).
  Verdict<control::Descriptor> on_get_descriptor(std::span<const std::byte> body,
                                                 const TablePtr& table);
  // READ (TCP): the bytes to answer with, from the current table or its log.
  struct ReadAnswer {
    std::span<const std::byte> bytes;
    // Bytes still being rewritten (the change log; a streamed table's header
    // page): copy them now, the client checks the copy (seqlock, CRC).
    bool changing = false;
  };
  Verdict<ReadAnswer> on_read(std::span<const std::byte> body, const TablePtr& table);

  // A verbs SEND after the accept: AUTH (answered with AUTH_OK + DESCRIPTOR)
  // or KEEPALIVE (answered with KEEPALIVE_ACK). Drops (tell = false) a
  // message that is neither, malformed, or out of turn.
  struct Auth {
    control::Proof server_proof;
  };
  struct Keepalive {
    uint64_t seq = 0;
  };
  using Message = std::variant<Auth, Keepalive>;
  Verdict<Message> on_message(std::span<const std::byte> message);

  // Nothing heard for the handshake timeout (before kReady) or the idle
  // timeout (after): what the client is told before it is dropped.
  Refusal timed_out();
  // A frame of a type no client sends (TCP).
  Refusal not_a_request(control::MsgType type);
  // Marks the session refused (by the transport, e.g. "not ready" after AUTH).
  Refusal refuse(control::ErrorCode code, std::string why);

  State state() const { return state_; }
  // Whether this client was given the table of `epoch` (not log-only):
  // while it stays connected, that table is being read.
  bool holds_table(uint64_t epoch) const { return table_epoch_ == epoch; }
  bool log_only() const { return log_only_; }
  bool ready() const { return state_ == State::kReady; }
  bool closing() const { return state_ == State::kClosing; }

 private:
  Verdict<control::HelloOk> hello(const Result<control::Hello>& m, control::ErrorCode refusal);
  // Why a client that is not kReady may not have what it asked for.
  Refusal not_ready();
  Verdict<control::Proof> check_proof(const control::Proof& proof);

  const ServerTerms& terms_;
  State state_ = State::kAwaitHello;
  bool log_only_ = false;
  std::optional<uint64_t> table_epoch_;
  control::Nonce client_nonce_{}, server_nonce_{};
};

// The client's half: what to send next and whether to trust what came back.
// One handshake at a time; start() begins a new one (each connection).
class ClientSession {
 public:
  explicit ClientSession(std::optional<std::string> secret) : secret_(std::move(secret)) {}

  // From the next start() on, ask for the change log alone (a follower
  // that has loaded its table): the server may then give a descriptor
  // without a table, and lets the table go when no one else reads it.
  void set_log_only(bool on) { log_only_ = on; }

  // A new handshake: the HELLO to send, with a fresh nonce. The whole
  // handshake must be done by `deadline`, however the server spaces its
  // bytes: each of its waits ends by deadline(), none has a timeout of its own.
  Result<control::Hello> start(Clock::time_point deadline = Clock::time_point::max());
  Clock::time_point deadline() const { return deadline_; }
  // HELLO_OK (a frame body): the AUTH proof to send, or nullopt when the
  // server asks for none. Refuses a server that skips AUTH while we hold a secret.
  Result<std::optional<control::Proof>> on_hello_ok(std::span<const std::byte> body);
  // AUTH_OK's body: is the server's proof right?
  Status on_auth_ok(std::span<const std::byte> body);
  // DESCRIPTOR's body, which must name `transport` (over verbs, with an rkey).
  Status on_descriptor(std::span<const std::byte> body, control::TransportKind transport);

  // Verbs: the accept's private data (HELLO_OK, and DESCRIPTOR unless AUTH is
  // required): the AUTH proof to send, or nullopt when the session is done.
  Result<std::optional<control::Proof>> on_accept(std::span<const std::byte> private_data);
  // Verbs: the one message answering our AUTH (AUTH_OK + DESCRIPTOR, or ERROR).
  Status on_auth_answer(std::span<const std::byte> message);
  // Verbs: a DESCRIPTOR message after the handshake, the epoch's registered
  // prefix grown. Everything but rkey and readable_length must stay as it
  // was (but table_length, which comes down from the room to the table's
  // own length once it is complete), and the prefix may only grow.
  Status on_grown(std::span<const std::byte> message);

  // An ERROR from the server, as a Status of the kind its code calls for
  // (control::error_kind). Body (TCP) or whole frame (verbs reject, message).
  static Status server_error(const control::ErrorMsg& e);
  static Status server_error_body(std::span<const std::byte> body);
  static Status server_error_frame(std::span<const std::byte> frame);
  // Range checks before a batch is posted (the same on every transport): each
  // read 1..max_read_len bytes, inside its region, the whole batch within
  // max_in_flight. (Whether the table's reads are readable yet is the
  // reader's to wait for: readable_end().)
  Status check_batch(std::span<const TableRead> batch, size_t outstanding, uint32_t max_read_len,
                     uint32_t max_in_flight) const;

  const control::HelloOk& hello_ok() const { return hello_ok_; }
  const control::Descriptor& descriptor() const { return descriptor_; }
  control::Descriptor& descriptor_for_test() { return descriptor_; }
  // The end of the batch's furthest table read.
  static uint64_t readable_end(std::span<const TableRead> batch);

 private:
  Result<std::optional<control::Proof>> accept_hello_ok(const control::HelloOk& h);
  Status check_server_proof(const control::Proof& proof) const;
  Status accept_descriptor(const control::Descriptor& d, control::TransportKind transport);

  std::optional<std::string> secret_;
  bool log_only_ = false;
  Clock::time_point deadline_ = Clock::time_point::max();
  control::Nonce client_nonce_{};
  control::HelloOk hello_ok_;
  control::Descriptor descriptor_;
};

// One connect loop for every reader: calls `attempt` (with the deadline it
// must end by) until it succeeds, fails with a kind other than kUnavailable
// (retrying cannot help: a wrong secret, a lying server), or the deadline
// comes; waits 100 ms after the first failure, doubling up to 1 s. Returns
// the last status. The server's "not ready" and "server full" are
// kUnavailable (control::error_kind): a client waits them out until its
// --connect-timeout. "snapshot pending" says the server is alive and taking
// a snapshot for us, which takes as long as the master's RDB: each one moves
// the deadline on by the whole timeout, and is logged every few seconds.
using ConnectAttempt = std::function<Status(Clock::time_point deadline)>;
Status connect_with_backoff(Clock::time_point deadline, const ConnectAttempt& attempt);
// Whether `s` is a server's "snapshot pending" answer.
bool snapshot_pending(const Status& s);

}  // namespace rrs
