#include "common/transport/control_session.h"

#include <algorithm>
#include <thread>

#include "common/auth/auth.h"
#include "common/base/log.h"

namespace rrs {

using control::ErrorCode;
using control::MsgType;

// --- Server ------------------------------------------------------------------

std::optional<Refusal> ServerSession::admit(size_t clients, const AccessPolicy& access) {
  if (clients < access.max_clients) return std::nullopt;
  return Refusal{ErrorCode::kServerFull, "already serving " + std::to_string(access.max_clients) +
                                             " clients (--max-clients); try again later"};
}

std::optional<Refusal> ServerSession::admit_unauthenticated(size_t pending, size_t from_address,
                                                            const AccessPolicy& access) {
  if (from_address >= access.max_unauthenticated_per_address)
    return Refusal{ErrorCode::kServerFull,
                   "already " + std::to_string(from_address) +
                       " connections from this address that have not authenticated (at most " +
                       std::to_string(access.max_unauthenticated_per_address) +
                       " per address); try again later"};
  if (pending >= access.max_unauthenticated)
    return Refusal{ErrorCode::kServerFull, "already " + std::to_string(pending) +
                                               " connections that have not authenticated; "
                                               "try again later"};
  return std::nullopt;
}

Verdict<control::Descriptor> ServerSession::describe(const TablePtr& t,
                                                     control::TransportKind transport) {
  if (!t) return Refusal{ErrorCode::kNotReady, "no table published yet"};
  control::Descriptor d;
  d.epoch = t->epoch();
  d.table_length = t->length();
  d.readable_length = d.table_length;
  d.layout_version = t->header.layout_version;
  d.transport = transport;
  if (t->log) {
    d.log_id = t->log->id();
    d.log_length = t->log->memory().size();
  }
  return d;
}

Verdict<control::Descriptor> ServerSession::offer(const TablePtr& t,
                                                  control::TransportKind transport) {
  // Before AUTH (verbs' connect request) only whether anything is published:
  // a peer that has not proved the secret never makes the master fork.
  const bool wants_table = ready() && !log_only_;
  if (wants_table) {
    if (terms_.demand)
      if (std::optional<Refusal> no = terms_.demand->refuse(t)) return std::move(*no);
    if (t && t->empty())
      return Refusal{ErrorCode::kNotReady, "no table is published (not taken yet, or given back)"};
  }
  auto d = describe(t, transport);
  if (d.ok() && wants_table) table_epoch_ = d->epoch;
  return d;
}

Refusal ServerSession::refuse(ErrorCode code, std::string why) {
  state_ = State::kClosing;
  return Refusal{code, std::move(why)};
}

Refusal ServerSession::not_a_request(MsgType type) {
  return refuse(ErrorCode::kBadMessage,
                "message type " + std::to_string(static_cast<int>(type)) + " is not a request");
}

Verdict<control::HelloOk> ServerSession::on_hello(std::span<const std::byte> body) {
  return hello(control::decode_hello(body), control::hello_refusal(body));
}

Verdict<control::HelloOk> ServerSession::on_connect(std::span<const std::byte> private_data) {
  return hello(control::decode_connect(private_data), control::connect_refusal(private_data));
}

Verdict<control::HelloOk> ServerSession::hello(const Result<control::Hello>& m, ErrorCode refusal) {
  if (!m.ok()) return refuse(refusal, m.status().reason());
  auto v = control::negotiate_version(*m);
  if (!v.ok()) return refuse(ErrorCode::kUnsupportedVersion, v.status().reason());
  if (state_ != State::kAwaitHello) return refuse(ErrorCode::kBadMessage, "a second HELLO");
  control::HelloOk ok;
  ok.version = *v;
  ok.max_read_len = control::kMaxReadLength;
  ok.max_in_flight = terms_.max_in_flight;
  ok.keepalive_interval_ms = static_cast<uint32_t>(terms_.keepalive_interval.count());
  ok.auth_required = terms_.access.secret.has_value();
  auto nonce = auth::random_nonce();
  if (!nonce.ok()) return refuse(ErrorCode::kInternal, nonce.status().message());
  ok.server_nonce = *nonce;
  client_nonce_ = m->client_nonce;
  server_nonce_ = ok.server_nonce;
  log_only_ = m->log_only;
  state_ = ok.auth_required ? State::kAwaitAuth : State::kReady;
  return ok;
}

// The client's proof of the shared secret, against this session's nonces.
// Right: our own proof for AUTH_OK. Wrong: "authentication failed", and
// nothing else is revealed.
Verdict<control::Proof> ServerSession::on_auth(std::span<const std::byte> body) {
  if (state_ == State::kAwaitHello) return refuse(ErrorCode::kBadMessage, "HELLO first");
  if (state_ != State::kAwaitAuth) return refuse(ErrorCode::kBadMessage, "AUTH not asked for");
  auto proof = control::decode_auth(body);
  if (!proof.ok()) return refuse(ErrorCode::kBadMessage, proof.status().reason());
  return check_proof(*proof);
}

Verdict<control::Proof> ServerSession::check_proof(const control::Proof& proof) {
  const std::string& secret = *terms_.access.secret;
  if (!auth::proofs_equal(proof, auth::client_proof(secret, client_nonce_, server_nonce_)))
    return refuse(ErrorCode::kAuthFailed,
                  "wrong shared secret (compare the client's and the server's --auth-file)");
  state_ = State::kReady;
  return auth::server_proof(secret, client_nonce_, server_nonce_);
}

Refusal ServerSession::not_ready() {
  if (state_ == State::kAwaitHello) return refuse(ErrorCode::kBadMessage, "HELLO first");
  return refuse(ErrorCode::kAuthFailed,
                "this rdma-server requires the shared secret: the client must AUTH first "
                "(rdma-client --auth-file)");
}

Verdict<control::Descriptor> ServerSession::on_get_descriptor(std::span<const std::byte> body,
                                                              const TablePtr& table) {
  if (!ready()) return not_ready();
  if (!body.empty()) return refuse(ErrorCode::kBadMessage, "unexpected body");
  auto d = offer(table, control::TransportKind::kTcp);
  if (!d.ok()) state_ = State::kClosing;
  return d;
}

// A READ of the current table or of its change log. A replaced table or log
// is "epoch gone", not the client's fault: it may fetch the new descriptor
// and start over, so the session stays open.
Verdict<ServerSession::ReadAnswer> ServerSession::on_read(std::span<const std::byte> body,
                                                          const TablePtr& t) {
  if (!ready()) return not_ready();
  auto m = control::decode_read(body);
  if (!m.ok()) return refuse(ErrorCode::kBadMessage, m.status().reason());
  if (!t) return refuse(ErrorCode::kNotReady, "no table published yet");
  const bool log = m->region == control::Region::kChangeLog;
  if (log ? !t->log || m->epoch != t->log->id() : m->epoch != t->epoch())
    return Refusal{ErrorCode::kEpochGone,
                   (log ? "change log " : "epoch ") + std::to_string(m->epoch) +
                       " is no longer served (now epoch " + std::to_string(t->epoch()) + ")"};
  const std::span<const std::byte> region = log ? t->log->memory()
                                                : t->bytes.span().first(t->length());
  if (m->length == 0 || m->length > control::kMaxReadLength)
    return refuse(ErrorCode::kTooLarge, "read length " + std::to_string(m->length) +
                                            " outside 1.." +
                                            std::to_string(control::kMaxReadLength));
  if (m->offset > region.size() || m->length > region.size() - m->offset)
    return refuse(ErrorCode::kOutOfRange, "range " + std::to_string(m->offset) + "+" +
                                              std::to_string(m->length) + " is outside the " +
                                              (log ? "change log" : "table") + " of " +
                                              std::to_string(region.size()) + " bytes");
  const bool header_page = t->streamed() && !t->complete() && m->offset < table::kRegionAlign;
  return ReadAnswer{region.subspan(m->offset, m->length), log || header_page};
}

// Over verbs a peer that breaks the message protocol is dropped unanswered:
// rdma-client never does, so there is nobody to tell.
Verdict<ServerSession::Message> ServerSession::on_message(std::span<const std::byte> message) {
  auto drop = [this](std::string why) {
    state_ = State::kClosing;
    return Refusal{ErrorCode::kBadMessage, std::move(why), /*tell=*/false};
  };
  auto type = control::message_type(message);
  if (!type.ok()) return drop("sent a bad message: " + type.status().reason());
  if (*type == MsgType::kAuth) {
    if (state_ != State::kAwaitAuth) return drop("sent AUTH when not asked for");
    auto proof = control::decode_auth_message(message);
    if (!proof.ok()) return drop("sent a bad message: " + proof.status().reason());
    auto mine = check_proof(*proof);
    if (!mine.ok()) return mine.refusal();
    return Message{Auth{*mine}};
  }
  if (!ready()) return drop("sent a keepalive before AUTH");
  auto seq = control::decode_keepalive(message, MsgType::kKeepalive);
  if (!seq.ok()) return drop("sent a bad message: " + seq.status().reason());
  return Message{Keepalive{*seq}};
}

Refusal ServerSession::timed_out() {
  const AccessPolicy& a = terms_.access;
  if (state_ == State::kReady)
    return refuse(ErrorCode::kIdle, "no request for " + std::to_string(a.idle_timeout.count()) +
                                        " s (--idle-timeout)");
  return refuse(ErrorCode::kIdle,
                std::string(state_ == State::kAwaitAuth ? "no AUTH" : "no HELLO/AUTH") +
                    " within " + std::to_string(a.handshake_timeout.count()) + " ms");
}

// --- Client ------------------------------------------------------------------

Result<control::Hello> ClientSession::start(Clock::time_point deadline) {
  deadline_ = deadline;
  control::Hello hello;
  RRS_ASSIGN_OR_RETURN(client_nonce_, auth::random_nonce());
  hello.client_nonce = client_nonce_;
  hello.log_only = log_only_;
  hello_ok_ = {};
  descriptor_ = {};
  return hello;
}

Result<std::optional<control::Proof>> ClientSession::on_hello_ok(std::span<const std::byte> body) {
  auto h = control::decode_hello_ok(body);
  if (!h.ok()) return h.status().as(ErrorKind::kBadData);
  return accept_hello_ok(*h);
}

Result<std::optional<control::Proof>> ClientSession::accept_hello_ok(const control::HelloOk& h) {
  hello_ok_ = h;
  return auth::answer_challenge(secret_, hello_ok_, client_nonce_);
}

Status ClientSession::check_server_proof(const control::Proof& proof) const {
  return auth::check_server(*secret_, client_nonce_, hello_ok_, proof);
}

Status ClientSession::on_auth_ok(std::span<const std::byte> body) {
  auto p = control::decode_auth(body);
  if (!p.ok()) return p.status().as(ErrorKind::kBadData);
  return check_server_proof(*p);
}

Status ClientSession::on_descriptor(std::span<const std::byte> body,
                                    control::TransportKind transport) {
  auto d = control::decode_descriptor(body);
  if (!d.ok()) return d.status().as(ErrorKind::kBadData);
  return accept_descriptor(*d, transport);
}

Status ClientSession::accept_descriptor(const control::Descriptor& d,
                                        control::TransportKind transport) {
  const bool verbs = transport == control::TransportKind::kVerbs;
  if (d.transport != transport || (verbs && d.table_length != 0 && d.rkey == 0))
    return Status::error("read descriptor", verbs ? "server did not publish an RDMA region"
                                                  : "server described another transport")
        .as(ErrorKind::kBadData);
  if (d.table_length == 0 && !log_only_)
    return Status::error("read descriptor", "the server described no table to a client that "
                                            "asked for one")
        .as(ErrorKind::kBadData);
  // Only a verbs epoch still being written is readable in part (a prefix
  // with its header page in it).
  if (verbs ? d.table_length != 0 && d.readable_length < table::kHeaderSize
            : d.readable_length != d.table_length)
    return Status::error("read descriptor", "readable length " + std::to_string(d.readable_length) +
                                                " of a " + std::to_string(d.table_length) +
                                                "-byte table")
        .as(ErrorKind::kBadData);
  descriptor_ = d;
  return {};
}

Status ClientSession::on_grown(std::span<const std::byte> message) {
  auto d = control::decode_descriptor_message(message);
  if (!d.ok()) return d.status().as(ErrorKind::kBadData);
  const control::Descriptor& was = descriptor_;
  // Once complete, the table's length is its own rather than its room's.
  const bool same = d->epoch == was.epoch && d->table_length <= was.table_length &&
                    d->remote_addr == was.remote_addr && d->layout_version == was.layout_version &&
                    d->transport == was.transport && d->log_id == was.log_id &&
                    d->log_length == was.log_length && d->log_addr == was.log_addr &&
                    d->log_rkey == was.log_rkey;
  if (!same)
    return Status::error("read descriptor", "the server's grown descriptor of epoch " +
                                                std::to_string(d->epoch) +
                                                " describes another table")
        .as(ErrorKind::kBadData);
  if (d->readable_length < std::min(was.readable_length, d->table_length) || d->rkey == 0)
    return Status::error("read descriptor", "the server's readable prefix of epoch " +
                                                std::to_string(d->epoch) +
                                                " shrank, or has no rkey")
        .as(ErrorKind::kBadData);
  descriptor_ = *d;
  return {};
}

uint64_t ClientSession::readable_end(std::span<const TableRead> batch) {
  uint64_t end = 0;
  for (const TableRead& r : batch)
    if (r.region == control::Region::kTable) end = std::max<uint64_t>(end, r.offset + r.dst.size());
  return end;
}

Result<std::optional<control::Proof>> ClientSession::on_accept(
    std::span<const std::byte> private_data) {
  auto accept = control::decode_accept(private_data);
  if (!accept.ok()) return accept.status().as(ErrorKind::kBadData);
  auto proof = accept_hello_ok(accept->hello);
  if (!proof.ok() || *proof) return proof;
  RRS_RETURN_IF_ERROR(accept_descriptor(*accept->descriptor, control::TransportKind::kVerbs));
  return proof;
}

Status ClientSession::on_auth_answer(std::span<const std::byte> message) {
  auto type = control::message_type(message);
  if (!type.ok()) return type.status().as(ErrorKind::kBadData);
  if (*type == MsgType::kError) return server_error_frame(message);
  auto granted = control::decode_auth_granted(message);
  if (!granted.ok()) return granted.status().as(ErrorKind::kBadData);
  RRS_RETURN_IF_ERROR(check_server_proof(granted->server_proof));
  return accept_descriptor(granted->descriptor, control::TransportKind::kVerbs);
}

Status ClientSession::server_error(const control::ErrorMsg& e) {
  return Status::error("rdma-server answered",
                       std::string(control::error_code_name(e.code)) + ": " + e.text)
      .as(control::error_kind(e.code));
}

Status ClientSession::server_error_body(std::span<const std::byte> body) {
  auto e = control::decode_error(body);
  if (!e.ok()) return e.status().as(ErrorKind::kBadData);
  return server_error(*e);
}

Status ClientSession::server_error_frame(std::span<const std::byte> frame) {
  auto e = control::decode_reject(frame);
  if (!e.ok()) return e.status().as(ErrorKind::kBadData);
  return server_error(*e);
}

Status ClientSession::check_batch(std::span<const TableRead> batch, size_t outstanding,
                                  uint32_t max_read_len, uint32_t max_in_flight) const {
  if (outstanding + batch.size() > max_in_flight)
    return Status::error("post read", "more than max_in_flight reads outstanding");
  for (const TableRead& r : batch) {
    const bool log = r.region == control::Region::kChangeLog;
    const uint64_t length = log ? descriptor_.log_length : descriptor_.table_length;
    if (r.dst.empty() || r.dst.size() > max_read_len)
      return Status::error("post read", "length " + std::to_string(r.dst.size()) + " outside 1.." +
                                            std::to_string(max_read_len));
    if (r.offset > length || r.dst.size() > length - r.offset)
      return Status::error("post read", "range " + std::to_string(r.offset) + "+" +
                                            std::to_string(r.dst.size()) + " is outside the " +
                                            (log ? "change log" : "published table"));
  }
  return {};
}

// --- Connecting --------------------------------------------------------------

namespace {

// Whether `s` carries an ERROR the server sent (ClientSession::server_error),
// not a local failure such as a timeout.
bool server_refusal(const Status& s) {
  return !s.ok() && s.message().find("rdma-server answered: ") != std::string::npos;
}

}  // namespace

Status connect_with_backoff(Clock::time_point deadline, const ConnectAttempt& attempt) {
  constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
  // A server that restarts is back within a second or so; waiting longer
  // between tries would only delay the client.
  constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);
  // How often a wait for the server's snapshot is logged.
  constexpr auto kPendingNote = std::chrono::seconds(5);
  const auto timeout = deadline - Clock::now();
  const auto waiting_since = Clock::now();
  auto next_note = waiting_since;
  auto backoff = kFirstBackoff;
  // The server's last refusal ("server full", "not ready"): if the final try
  // only times out, that refusal is still why the client got no table.
  Status refusal;
  for (;;) {
    Status s = attempt(deadline);
    if (server_refusal(s)) refusal = s;
    if (snapshot_pending(s)) {
      // The whole timeout from now, and the next pause on top of it.
      deadline = std::max(deadline, Clock::now() + timeout + kMaxBackoff);
      if (Clock::now() >= next_note) {
        log::info("waiting for rdma-server's snapshot (" +
                  std::to_string(static_cast<int>(seconds_since(waiting_since))) +
                  " s so far): " + s.reason());
        next_note = Clock::now() + kPendingNote;
      }
    }
    if (s.ok() || s.kind() != ErrorKind::kUnavailable) return s;
    if (Clock::now() + backoff >= deadline) {
      if (refusal.ok() || server_refusal(s)) return s;
      return Status::error(refusal.step(),
                           refusal.reason() + " (the last try: " + s.message() + ")")
          .as(ErrorKind::kUnavailable);
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

bool snapshot_pending(const Status& s) {
  static const std::string prefix = std::string(
                                        control::error_code_name(ErrorCode::kSnapshotPending)) +
                                    ": ";
  return !s.ok() && s.reason().starts_with(prefix);
}

}  // namespace rrs
