// The sidecar's connection to the master, speaking Redis's replica protocol:
// the handshake, the RDB the master sends after +FULLRESYNC (either framing),
// then the replication stream, acknowledged every second like a replica does.
//
//   auto link = MasterLink::connect(master, creds, opts);
//   auto sync = link->psync("?", -1);          // +FULLRESYNC <replid> <offset>
//   link->receive_rdb(parser, on_event, stop); // the RDB, parsed as it arrives
//   link->follow(stop, on_bytes);              // stream bytes; offset advances
//
// Blocking I/O with timeouts, on one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/net/socket.h"
#include "common/redis/redis_client.h"
#include "proto/rdb_parser.h"

namespace rrs {

struct MasterLinkOptions {
  // REPLCONF listening-port: what the master shows in INFO replication.
  uint16_t announce_port = 0;
  // Connecting and each handshake reply.
  std::chrono::milliseconds timeout{30000};
  // The longest silence from the master once syncing, like repl-timeout: a
  // master sends a newline every second while preparing the RDB, and PINGs
  // the stream every repl-ping-replica-period (10 s).
  std::chrono::milliseconds repl_timeout{60000};
};

struct PsyncReply {
  enum Kind {
    kFull,      // +FULLRESYNC: an RDB as of `offset` follows
    kContinue,  // +CONTINUE: the stream resumes after `offset`
    kNotReady,  // -LOADING / -NOMASTERLINK: ask again later (`why`)
  };
  Kind kind = kFull;
  std::string replid;   // the master's replication ID
  uint64_t offset = 0;  // the offset the keyspace (RDB) or our copy is at
  std::string why;
};

// The Valkey release the sidecar announces in REPLCONF version: the first
// that writes the newest format it reads (RDB 80), so a newer Valkey sends
// that rather than a format the parser would refuse.
inline constexpr std::string_view kAnnouncedValkeyVersion = "9.0.0";

class MasterLink {
 public:
  static Result<MasterLink> connect(const Endpoint& master, const RedisCredentials& creds,
                                    MasterLinkOptions opts);

  // PSYNC <replid> <next_offset> ("?", -1 asks for a full resync; to
  // continue, ask for the byte after offset()). Errors name the master's
  // answer and what to do about it.
  Result<PsyncReply> psync(std::string_view replid, int64_t next_offset);

  // Reads the RDB preamble, then receives the RDB straight into `parser`'s
  // buffer and hands each event to `on_event` (which may return an error to
  // abandon the transfer) until the RDB's EOF. Checks the framing: the
  // $<len> length, or the 40-byte mark after a diskless $EOF:<mark> RDB.
  // Bytes after the RDB start the replication stream.
  using OnEvent = std::function<Status(const rdb::Event&)>;
  Status receive_rdb(rdb::RdbParser& parser, const OnEvent& on_event,
                     const std::atomic<bool>& stop);

  // The RDB size for the $<len> framing (0 for diskless), once known.
  uint64_t rdb_size() const { return rdb_size_; }

  // Consumes the replication stream until `stop`, an error, or the master
  // going silent: hands every byte, in order, to `on_bytes` (the first call
  // starts at the stream position offset()), advances offset() by it, and
  // sends REPLCONF ACK <offset> at once and then every second.
  using OnBytes = std::function<void(std::span<const std::byte>)>;
  Status follow(const std::atomic<bool>& stop, const OnBytes& on_bytes);

  // The master's replication offset our copy has reached: the RDB's offset
  // plus every stream byte received since. REPLCONF ACK reports it.
  uint64_t offset() const { return offset_; }
  const std::string& replid() const { return replid_; }

 private:
  MasterLink(std::unique_ptr<Stream> stream, Endpoint master, MasterLinkOptions opts)
      : stream_(std::move(stream)), master_(std::move(master)), opts_(opts) {}

  Status send_command(std::initializer_list<std::string_view> argv);
  // The next reply line, skipping the empty lines a master sends to keep
  // the link alive while it prepares an RDB.
  Result<std::string> read_line(std::chrono::milliseconds timeout, const std::atomic<bool>* stop);
  // Whether the link has bytes to read, waiting at most `wait`.
  Result<bool> wait_readable(std::chrono::milliseconds wait);
  // Reads into inbuf_; 0 bytes read means the wait ended (timeout or stop).
  Result<size_t> read_some(std::chrono::milliseconds wait);
  Status expect_ok(std::string_view what, std::string_view hint);
  Status send_ack();
  // receive_rdb()'s steps. The preamble sets rdb_size_ ($<len>) or returns
  // the end mark ($EOF:<mark>; empty otherwise). pump_rdb() feeds the
  // socket to the parser until its EOF opcode; check_rdb_end() then checks
  // the framing and keeps what follows it in inbuf_.
  Result<std::string> read_rdb_preamble(const std::atomic<bool>& stop);
  Status pump_rdb(rdb::RdbParser& parser, const OnEvent& on_event, const std::atomic<bool>& stop);
  Status check_rdb_end(const rdb::RdbParser& parser, const std::string& mark);

  std::unique_ptr<Stream> stream_;
  Endpoint master_;
  MasterLinkOptions opts_;
  std::string inbuf_;  // bytes read and not yet consumed
  std::string replid_;
  uint64_t offset_ = 0;
  uint64_t rdb_size_ = 0;
};

}  // namespace rrs
