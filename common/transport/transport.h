// The transport interface: how a table gets from the sidecar to a replica.
// TCP and verbs implement both halves; the conformance tests run the same
// cases against each.
//
//   server side: TableServer publishes a Table and answers clients.
//   client side: TableReader reads byte ranges of the remote table, several
//                at once, the way an RDMA READ does (post, then poll).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/table/table.h"
#include "proto/control.h"

namespace rrs {

// One read of a remote range into local memory: of the epoch's table, or of
// the change log that continues it (descriptor().log_*).
struct TableRead {
  uint64_t id;
  uint64_t offset;
  std::span<std::byte> dst;
  control::Region region = control::Region::kTable;
  // Begins only after every read posted before it has completed (verbs:
  // IBV_SEND_FENCE; TCP answers requests in order anyway). A follower chains
  // the change log's bytes and the header that checks them this way, in one
  // round trip.
  bool fence = false;
};

// Who may read, and how many at once: the same rules on every transport.
struct AccessPolicy {
  // The shared secret (common/auth/auth.h); with one, a client must AUTH before it
  // learns anything about the table. Without one, serve loopback only.
  std::optional<std::string> secret;
  // More authenticated clients than this are refused (kServerFull), on each
  // transport. A connection takes a slot only once it has proved the secret
  // (or, without one, said HELLO), so peers without it cannot fill the slots.
  uint32_t max_clients = 64;
  // Connections still in their handshake have a budget of their own, apart
  // from max_clients, and a smaller one per peer address: a host that opens
  // many and never proves the secret is refused ("server full") beyond it,
  // without touching the slots of clients that did prove it.
  uint32_t max_unauthenticated = 64;
  uint32_t max_unauthenticated_per_address = 8;
  // TCP: a client that sends no request for this long is dropped (0: never).
  // Verbs READs are invisible to the server; there the keepalive decides.
  std::chrono::seconds idle_timeout{300};
  // HELLO (and AUTH) must be done within this of the connection's arrival
  // (accept, or the verbs CONNECT_REQUEST): a deadline for the whole
  // handshake, however the peer spaces its bytes, on either transport.
  std::chrono::milliseconds handshake_timeout{10000};
};

class TableServer {
 public:
  virtual ~TableServer() = default;
  // Serves `table` to every client from now on. The previous epoch stays
  // alive while it may still be read (TCP: until reads already queued are
  // sent, later reads get "epoch gone"; verbs: while a client that was given
  // it stays connected, at most a grace period). Call on the loop thread.
  virtual Status publish(TablePtr table) = 0;
  // Whether it serves an epoch still being written (Table::streamed): TCP
  // does (each READ copies what is there), verbs too (it registers growing
  // prefixes a step ahead of the writer; but under its PD-per-client
  // fallback, publish() refuses an epoch until it is complete).
  virtual bool streams() const = 0;
  // "ADDR:PORT" clients connect to, for the ready line.
  virtual std::string address() const = 0;
  // Whether what it serves is encrypted on the wire (TCP with TLS).
  virtual bool encrypted() const { return false; }
  // Closes every client connection (clients may reconnect). Loop thread only.
  virtual void disconnect_all() = 0;
  // Clients connected now. Loop thread only.
  virtual size_t client_count() const = 0;
  // Clients connected now that were given the table of `epoch` and have not
  // let it go (a follower reconnects log-only once it has loaded): while
  // any does, that table is being read. Loop thread only.
  virtual size_t table_readers(uint64_t epoch) const = 0;
};

// Client side. One thread drives a reader; it is not thread safe.
class TableReader {
 public:
  virtual ~TableReader() = default;

  // Connects, negotiates a version and fetches the descriptor, retrying
  // until `deadline` while the server is unreachable, has no table yet or is
  // full (so a client may start first, or wait for a slot).
  virtual Status connect(Clock::time_point deadline) = 0;
  // From the next connect() on, ask for the change log alone (a follower
  // that has loaded its table): the descriptor may then describe no table
  // (table_length 0), and this client does not keep the server from giving
  // the table's memory back.
  virtual void set_log_only(bool on) = 0;
  virtual const control::Descriptor& descriptor() const = 0;
  virtual uint32_t max_read_length() const = 0;
  virtual uint32_t max_in_flight() const = 0;

  // Makes `memory` usable as a read destination (verbs registers it; TCP has
  // nothing to do). Call once per buffer before posting reads into it.
  virtual Status register_buffer(std::span<std::byte> memory) = 0;
  // Forgets a buffer given to register_buffer (verbs deregisters it); call
  // before freeing its memory, or a later buffer at the same address could
  // be read into through the stale registration's pages.
  virtual void unregister_buffer(std::span<std::byte> memory) = 0;

  // Like a chain of RDMA READs: starts copying, for each request, table bytes
  // [offset, offset+dst.size()) into dst, which must stay valid until its id
  // completes. Reads complete in the order they were posted. At most
  // max_in_flight() reads may be outstanding; dst.size() <= max_read_length().
  virtual Status post_reads(std::span<const TableRead> batch) = 0;

  // Waits up to `timeout` for at least one completion and appends the ids of
  // every completed read to `done`. A failed read fails the whole call: the
  // connection is unusable afterwards.
  virtual Status poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) = 0;

  // Call at least once a second while not calling poll() for a while (e.g.
  // waiting for buffers): keeps the server told that this client is alive
  // (verbs: a KEEPALIVE message; TCP: nothing, the kernel's keepalive does
  // it). Reads already complete are kept for the next poll(). An error means
  // the connection is gone; post_reads/poll report it too.
  virtual Status keepalive() = 0;
};

}  // namespace rrs
