// Applies the master's replication stream to the target Redis, command by
// command, with pipelining ("append, send, then get" — the follower sends a
// batch, fetches the next one, then reads the replies): SELECT is forwarded and
// tracked, a MULTI ... EXEC block is held until its EXEC and sent whole (so a
// batch boundary or a stop never splits it), PING and REPLCONF (the master
// talking to its replica, not data) are dropped. Every reply is checked: a
// command the target refuses means the replica would diverge, so it fails
// naming the command and its stream position rather than carry on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/follow/transaction_blocks.h"
#include "client/restore/ttl_guard.h"
#include "common/redis/redis_client.h"
#include "proto/resp_parser.h"

namespace rrs {

class StreamApplier {
 public:
  // `position`: the stream position of the first command that will be added;
  // `stream_db`: the DB the stream has selected there (the table's
  // source_stream_db), selected on the target first. `target` is in DB 0.
  StreamApplier(RedisClient target, uint64_t position, uint32_t stream_db = 0);

  // Queues one command; `end` is the stream position after it.
  Status add(const resp::Command& cmd, uint64_t end);
  // Writes what is queued (all but an open MULTI block) to the target without
  // waiting: the target applies it while the follower fetches more.
  Status send();
  // Reads and checks the replies to everything sent.
  Status collect();
  Status flush() {
    RRS_RETURN_IF_ERROR(send());
    return collect();
  }

  // The stream position after the last command the target applied (or that
  // was dropped): where following resumes.
  uint64_t applied() const { return applied_; }
  // Restore mode's TTL guard, once caught up (nothing in flight, no open
  // block): each guarded key whose TTL is still the guard's gets its own
  // back (client/restore/ttl_guard.h). Returns how many did.
  Result<uint64_t> restore_ttls(const TtlGuard& guard);
  uint64_t commands() const { return commands_; }
  uint32_t db() const { return db_; }
  bool in_transaction() const { return blocks_.open(); }

 private:
  enum class Expect { kAny, kOk, kQueued, kExec };
  struct Sent {
    std::string name;  // for error messages
    uint64_t end;      // stream position after it
    Expect expect;
    uint32_t db_after;
    uint32_t commands;  // stream commands it completes (an EXEC: its block's)
  };
  void queue(std::span<const std::string_view> args, uint64_t end, Expect expect,
             uint32_t commands);
  Status check(const Sent& s, const redisReply* reply) const;
  // Sends `command(key)` for each of `keys` in its DB (then back to the
  // stream's DB) and hands each reply to `on_reply`.
  Status per_key(const std::vector<const TtlGuard::Key*>& keys,
                 const std::function<std::vector<std::string>(const TtlGuard::Key&)>& command,
                 const std::function<Status(size_t, const redisReply*)>& on_reply);

  RedisClient target_;
  uint64_t applied_;
  uint64_t commands_ = 0;
  uint32_t db_ = 0;              // the DB the target is at after what was applied
  uint32_t sent_db_ = 0;         // ... after what was sent
  std::vector<Sent> in_flight_;  // appended, in order; replies not yet read
  TransactionBlocks blocks_;
};

}  // namespace rrs
