// Where follow mode puts the master's stream bytes once read from the change
// log: one interface, one implementation per ingest mode.
//
//   CommandSink (--mode restore): parses the bytes into commands
//   (resp::CommandParser) and applies them with a StreamApplier.
//   StreamForwarder (--mode replica): writes the bytes verbatim down the
//   target's replica link, so its replication offset moves exactly as if it
//   were attached to the master.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "client/follow/stream_applier.h"
#include "client/replica/replica_link.h"
#include "proto/resp_parser.h"

namespace rrs {

class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // The next stream bytes, contiguous with the last.
  virtual Status write(std::span<const std::byte> bytes) = 0;
  // Hands the target what was written, without waiting for it to apply it.
  virtual Status send() = 0;
  // Takes in what the target said about what it was sent; an error means it
  // refused something or went away.
  virtual Status collect() = 0;
  // The stream position the target has been given everything up to (and, for
  // commands, has acknowledged).
  virtual uint64_t applied() const = 0;
  // Status line fields after offset/lag: "commands=N" or "acked=O".
  virtual std::string progress() const = 0;
  // Called whenever the target has acknowledged everything the log holds,
  // and once more when the follower stops.
  virtual Status caught_up() { return {}; }
};

class CommandSink : public StreamSink {
 public:
  // `guard`: the keys the load held with a guard TTL, given their own back
  // at the first catch-up (client/restore/ttl_guard.h).
  // `stream_db`: the DB the stream has selected at `position`.
  CommandSink(RedisClient target, uint64_t position, uint32_t stream_db, TtlGuard guard)
      : applier_(std::move(target), position, stream_db),
        base_(position),
        guard_(std::move(guard)) {}
  Status write(std::span<const std::byte> bytes) override;
  Status send() override { return applier_.send(); }
  Status collect() override { return applier_.collect(); }
  uint64_t applied() const override { return applier_.applied(); }
  std::string progress() const override;
  Status caught_up() override;

 private:
  StreamApplier applier_;
  resp::CommandParser parser_;
  uint64_t base_;  // stream position of the parser's first byte
  TtlGuard guard_;
};

// Says how many of `guard`'s keys got their own TTL back, and warns when
// catching up took longer than the guard's window.
void log_guard_given_back(const TtlGuard& guard, uint64_t restored);

class StreamForwarder : public StreamSink {
 public:
  StreamForwarder(ReplicaLink& link, uint64_t position) : link_(link), position_(position) {}
  Status write(std::span<const std::byte> bytes) override;
  Status send() override { return {}; }  // write() already did
  Status collect() override { return link_.poll(std::chrono::milliseconds(0)); }
  uint64_t applied() const override { return position_; }
  std::string progress() const override;

 private:
  ReplicaLink& link_;
  uint64_t position_;
};

}  // namespace rrs
