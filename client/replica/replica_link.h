// The client as its target's master (--mode replica): a listening socket the
// target is pointed at with REPLICAOF, the replica handshake it then runs
// (PING, AUTH, REPLCONF ..., PSYNC), and the link the RDB and, after it, the
// master's stream go down, byte for byte as from the real master.
//
//   auto link = ReplicaLink::listen(local_ip, target_ip);  // any free port
//   target: REPLICAOF link->endpoint()
//   link->accept_full_sync(replid, offset, {target_replid, target_offset}, deadline);
//                                                          // +FULLRESYNC, $EOF:<mark>
//   link->send(rdb bytes) ...; link->end_rdb();            // the mark
//   link->wait_ack(...);                                   // loaded: REPLCONF ACK <offset>
//   link->send(stream bytes) ...                           // follow mode
//
// Only the target's address may connect; everything it sends is untrusted
// and parsed strictly (resp::CommandParser), with the handshake bounded.
// A target with tls-replication yes connects with TLS: the link then
// answers as a TLS server, with the certificate --redis-tls-cert names.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/replica/pending_peer.h"
#include "common/base/clock.h"
#include "common/net/endpoint.h"
#include "common/net/socket.h"
#include "common/net/stream.h"
#include "common/tls/tls_context.h"
#include "proto/resp_parser.h"

namespace rrs {

// 40 random hex characters, as Redis makes replication IDs and EOF marks.
std::string random_run_id();

// The target's own place in a history, read (INFO replication) just before
// it was told REPLICAOF: a Redis or Valkey since 4.0 that was a master asks
// its new master to continue it, PSYNC <replid> <offset + 1>.
struct TargetHistory {
  std::string replid;
  uint64_t offset = 0;
};

class ReplicaLink {
 public:
  // Connections from the target's address served at once while waiting for
  // the target: a few, for the target's own retries and a stray local
  // process or two, without letting a flood of them cost much.
  static constexpr size_t kMaxPendingPeers = 8;

  // Listens on `local_ip` (an address the target can reach: the one the
  // client's own connection to it comes from), on a port the kernel picks;
  // a TLS server with `tls` (a kServer context) when it is not null.
  static Result<ReplicaLink> listen(const std::string& local_ip, std::string target_ip,
                                    std::chrono::milliseconds io_timeout,
                                    std::shared_ptr<const TlsContext> tls = nullptr);
  ReplicaLink(ReplicaLink&&) noexcept = default;
  ReplicaLink& operator=(ReplicaLink&&) noexcept = default;

  Endpoint endpoint() const { return endpoint_; }

  // Waits until `deadline` for the target to connect, answers its handshake
  // and, to its PSYNC, replies +FULLRESYNC <replid> <offset> and opens a
  // diskless RDB transfer ($EOF:<mark>). Refuses a target that cannot take
  // that form (no REPLCONF capa eof: Redis older than 2.8.18).
  // The target asks to continue `target`'s history from past its offset. A
  // connection whose PSYNC asks for anything else (another history, or
  // "PSYNC ? -1", which any local process can send) is not the target: it
  // is dropped without a byte of data and logged with its address, as is
  // one that hangs up mid-handshake, and the link keeps waiting.
  // Up to kMaxPendingPeers connections are served at once, so one that
  // connects and stays silent cannot keep the target waiting in the listen
  // backlog: a peer silent for the I/O timeout is dropped, and when the set
  // is full the one silent longest makes room for a newcomer.
  Status accept_full_sync(std::string_view replid, uint64_t offset, const TargetHistory& target,
                          Clock::time_point deadline);

  // Writes all of `bytes`, waiting at most the I/O timeout for the target to
  // make room (it reads as fast as it loads).
  Status send(std::string_view bytes);
  // Ends the RDB: the mark that opened it.
  Status end_rdb() { return send(eof_mark_); }

  // Reads what the target sent, waiting at most `wait` for the first byte:
  // its REPLCONF ACK <offset> lines. kUnavailable if it closed the link.
  Status poll(std::chrono::milliseconds wait);
  // Waits until `deadline` for an ACK of at least `offset` (false: none came
  // in time). The first ACK after an RDB comes once the target has loaded it.
  Result<bool> wait_ack(uint64_t offset, Clock::time_point deadline);
  // The last offset the target acknowledged.
  std::optional<uint64_t> acked() const { return acked_; }
  // What the target asked for: "PSYNC <replid> <offset>", for logs.
  const std::string& psync_request() const { return psync_request_; }

  // Closes the link and stops listening: the target's reconnects are refused.
  void close() {
    conn_.reset();
    listener_.reset();
  }

 private:
  ReplicaLink() = default;
  // Accepts every connection waiting in the backlog into `pending`,
  // refusing other addresses and evicting the peer silent longest when full.
  void accept_pending(std::vector<PendingPeer>& pending);
  // Reads what `peer` sent and answers its complete commands: true once it
  // proved to be the target (its PSYNC) and got the +FULLRESYNC. kUnavailable
  // drops only that peer; any other error ends the wait.
  Result<bool> serve(PendingPeer& peer, std::string_view replid, uint64_t offset,
                     const TargetHistory& target);
  // Answers one handshake command; true once PSYNC was answered.
  Result<bool> answer(PendingPeer& peer, const resp::Command& cmd, std::string_view replid,
                      uint64_t offset, const TargetHistory& target);
  Status take_ack(const resp::Command& cmd);

  UniqueFd listener_;
  std::shared_ptr<const TlsContext> tls_;  // null: plain TCP
  std::unique_ptr<Stream> conn_;
  std::string last_drop_;  // why the last pending peer was dropped, for the timeout
  Endpoint endpoint_;
  std::string target_ip_;
  std::chrono::milliseconds io_timeout_{30000};
  resp::CommandParser parser_;  // the target's, from its handshake on: its ACKs
  std::string eof_mark_;
  std::string psync_request_;
  std::optional<uint64_t> acked_;
};

}  // namespace rrs
