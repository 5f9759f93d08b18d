// One connection to the replica link still in its handshake: it came from
// the target's address but has not yet sent the target's own PSYNC. The link
// serves several at once (ReplicaLink::accept_full_sync), so that a local
// process that connects and stays silent cannot hold the link while the
// target's own connection waits in the listen backlog; each keeps its own
// parser, byte count and idle clock, and any failure drops only that peer.
// Over TLS (a target with tls-replication yes) its stream runs the
// handshake as it reads: a peer whose handshake fails is dropped like one
// that sent garbage.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/net/stream.h"
#include "proto/resp_parser.h"

namespace rrs {

// A replica's whole handshake is a few hundred bytes; a peer that sends this
// much without a PSYNC is not a Redis replica.
inline constexpr size_t kMaxHandshakeBytes = size_t{64} * 1024;

struct PendingPeer {
  PendingPeer(std::unique_ptr<Stream> conn, std::string addr)
      : stream(std::move(conn)), name(std::move(addr)), last_heard(Clock::now()) {}

  // Reads what has arrived (one read, the socket is non-blocking) into the
  // parser. kUnavailable, with the reason, once the peer closed, failed (its
  // TLS handshake too) or went over kMaxHandshakeBytes: the link drops it.
  Status read();
  // Sends a short handshake answer without waiting. A replica reads each
  // answer before its next command, so one that leaves this unsent is not
  // a replica, and must not stall the others: kUnavailable, dropped.
  Status reply(std::string_view bytes) const;

  std::unique_ptr<Stream> stream;
  std::string name;  // "address:port", for logs
  resp::CommandParser parser;
  bool capa_eof = false;  // it sent REPLCONF capa eof
  size_t received = 0;
  // When it connected or last sent a byte: a peer silent for the I/O
  // timeout is dropped, and the one silent longest makes room when the
  // pending set is full.
  Clock::time_point last_heard;
};

}  // namespace rrs
