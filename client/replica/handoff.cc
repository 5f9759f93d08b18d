#include "client/replica/handoff.h"

#include <charconv>
#include <cstdio>
#include <thread>

#include "common/base/log.h"
#include "common/redis/redis_client.h"

namespace rrs {
namespace {

// How long the target may take to apply what it was forwarded before the
// handoff reads its offset (it is normally there within a round trip).
constexpr auto kSettle = std::chrono::seconds(5);
constexpr auto kPoll = std::chrono::milliseconds(20);
// The forwarded bytes may end inside a command (the follower forwards what
// its checks vouch for, not whole commands): the target's offset then stops
// short of them, at its last whole command, and stays there.
constexpr auto kStill = std::chrono::milliseconds(200);

// A numeric INFO field; 0 when absent or not a number.
uint64_t field_u64(std::string_view info, std::string_view field) {
  const std::string v = info_field(info, field);
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  return ec == std::errc() && end == v.data() + v.size() ? n : 0;
}

struct SyncCounters {
  uint64_t full = 0, partial_ok = 0;
};

Result<SyncCounters> sync_counters(RedisClient& master) {
  auto stats = master.info("stats");
  if (!stats.ok()) return stats.status().wrap("read the master's INFO stats");
  return SyncCounters{field_u64(*stats, "sync_full"), field_u64(*stats, "sync_partial_ok")};
}

// Can the master continue history `replid` from offset `next` (the first byte
// the target lacks)? kRefused-worthy when not, saying why and what to change.
Status check_backlog(std::string_view repl, std::string_view replid, uint64_t next,
                     const Endpoint& at) {
  const std::string step = "hand off to the master " + at.to_string();
  const std::string id = info_field(repl, "master_replid");
  const std::string id2 = info_field(repl, "master_replid2");
  const bool same = id == replid ||
                    (id2 == replid && next <= field_u64(repl, "second_repl_offset"));
  if (!same)
    return Status::error(step, "its replication history is " + id + ", the target's is " +
                                   std::string(replid) +
                                   " (the master restarted or failed over since the snapshot): "
                                   "it can only answer with a full resync, so the target was "
                                   "left as it is");
  const uint64_t end = field_u64(repl, "master_repl_offset");
  const uint64_t first = field_u64(repl, "repl_backlog_first_byte_offset");
  if (info_field(repl, "repl_backlog_active") != "1" || next < first || next > end + 1) {
    const uint64_t gap = end + 1 > next ? end + 1 - next : 0;
    return Status::error(
        step, "its backlog holds offsets " + std::to_string(first) + " to " + std::to_string(end) +
                  ", but the target needs them from " + std::to_string(next) +
                  ": the master would answer with a full resync, so the target was left as it "
                  "is (a replica at offset " +
                  std::to_string(next - 1) + "). Raise the master's repl-backlog-size above " +
                  std::to_string(gap) +
                  " bytes (CONFIG SET repl-backlog-size), with room for the writes during a "
                  "sync, and run again");
  }
  return {};
}

// The target's replication offset once it has applied `forwarded`, or
// whatever whole commands of it it has applied once its offset stops moving.
Result<uint64_t> settled_offset(RedisClient& target, uint64_t forwarded) {
  const auto deadline = Clock::now() + kSettle;
  uint64_t last = 0;
  auto last_moved = Clock::now();
  while (true) {
    auto repl = target.info("replication");
    if (!repl.ok()) return repl.status().wrap("read the target's INFO replication");
    const uint64_t at = field_u64(*repl, "master_repl_offset");
    if (at >= forwarded || Clock::now() >= deadline) return at;
    if (at != last) {
      last = at;
      last_moved = Clock::now();
    } else if (Clock::now() - last_moved >= kStill) {
      return at;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

// Waits until the target's link to `master` (host and port as REPLICAOF
// named them) is up; returns its INFO replication then.
Result<std::string> wait_link_up(RedisClient& target, const Endpoint& master,
                                 std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  while (Clock::now() < deadline) {
    auto repl = target.info("replication");
    if (!repl.ok()) return repl.status().wrap("read the target's INFO replication");
    last = info_field(*repl, "master_link_status");
    if (last == "up" && info_field(*repl, "master_host") == master.host &&
        info_field(*repl, "master_port") == std::to_string(master.port))
      return *repl;
    std::this_thread::sleep_for(kPoll);
  }
  return Status::error("wait for the target's link to " + master.to_string(),
                       "still " + last + " after " + std::to_string(timeout.count()) +
                           " s (can it reach that address? does the master need masterauth / "
                           "masteruser set on the target, for a user with +psync +replconf "
                           "+ping? the target's log says)")
      .as(ErrorKind::kUnavailable);
}

// The counters say the partial resync happened, but they count the master's
// every replica: trusted only when the target's own state cannot tell.
Status judge_by_counters(const Endpoint& master, uint64_t offset, uint64_t partial, uint64_t full) {
  if (partial > 0) {
    log::warn("the target's backlog cannot tell how its link began; the master's "
              "sync_partial_ok grew by " +
              std::to_string(partial) + ", which another replica may account for");
    return {};
  }
  return Status::error("hand off to the master " + master.to_string(),
                       full > 0
                           ? "it answered with a full resync (sync_full +" + std::to_string(full) +
                                 "): its backlog moved past offset " + std::to_string(offset) +
                                 " between the check and the PSYNC; raise "
                                 "repl-backlog-size"
                           : "the target's link is up but neither its backlog nor the "
                             "master's sync_partial_ok shows a partial resync (is "
                             "--master the master the target reached?)")
      .as(ErrorKind::kFailed);
}

// The target's own state after its link came up: the history it follows, and
// whether it kept its backlog (a partial resync) or got a new one (full).
Status judge_target(const Endpoint& master, std::string_view master_replid, std::string_view before,
                    std::string_view after, uint64_t offset, Resync& kind) {
  const std::string step = "hand off to the master " + master.to_string();
  if (info_field(after, "master_replid") != master_replid)
    return Status::error(step, "the target follows history " + info_field(after, "master_replid") +
                                   ", not the master's " + std::string(master_replid))
        .as(ErrorKind::kFailed);
  kind = judge_resync(before, after, offset);
  if (kind == Resync::kFull)
    return Status::error(step, "it answered with a full resync: the target's backlog now begins "
                               "at offset " +
                                   info_field(after, "repl_backlog_first_byte_offset") +
                                   ", past the offset " + std::to_string(offset) +
                                   " it continued from, so its data was replaced (the master's "
                                   "backlog moved on between the check and the PSYNC; raise "
                                   "repl-backlog-size)")
        .as(ErrorKind::kFailed);
  return {};
}

}  // namespace

Resync judge_resync(std::string_view before, std::string_view after, uint64_t offset) {
  if (info_field(before, "repl_backlog_active") != "1" ||
      info_field(after, "repl_backlog_active") != "1")
    return Resync::kUnknown;
  const uint64_t was = field_u64(before, "repl_backlog_first_byte_offset");
  const uint64_t now = field_u64(after, "repl_backlog_first_byte_offset");
  // Byte `offset` is still held: a backlog a full resync created begins past it.
  if (now != 0 && now <= offset) return Resync::kPartial;
  // Cut to its size since: a kept backlog may have dropped it.
  if (field_u64(after, "repl_backlog_histlen") >= field_u64(after, "repl_backlog_size"))
    return Resync::kUnknown;
  // Moved without being cut: replaced. Unmoved, it began right after `offset`
  // (nothing reached the target past its own full sync): a partial resync,
  // or a full one at that very offset; the backlog cannot tell which.
  return now != was ? Resync::kFull : Resync::kUnknown;
}

Result<bool> already_handed_off(const ClientConfig& config, const RedisCredentials& creds) {
  auto target = RedisClient::connect(config.redis, creds, config.io_timeout);
  if (!target.ok())
    return target.status().wrap("connect to the target").as(ErrorKind::kUnavailable);
  auto repl = target->info("replication");
  if (!repl.ok())
    return repl.status().wrap("read the target's INFO replication").as(ErrorKind::kUnavailable);
  return info_field(*repl, "role") == "slave" &&
         info_field(*repl, "master_host") == config.master.host &&
         field_u64(*repl, "master_port") == config.master.port &&
         info_field(*repl, "master_link_status") == "up";
}

Status hand_off(const ClientConfig& config, std::string_view replid, ReplicaLink& link,
                uint64_t forwarded) {
  const auto t0 = Clock::now();
  const auto io_timeout = std::chrono::milliseconds(config.io_timeout);
  auto target_creds = load_credentials(config.redis_auth_file, kClientAuthEnv, config.redis_tls);
  if (!target_creds.ok()) return (target_creds.status()).as(ErrorKind::kUsage);
  auto master_creds = load_credentials(config.master_auth_file, kMasterAuthEnv, config.redis_tls);
  if (!master_creds.ok()) return (master_creds.status()).as(ErrorKind::kUsage);
  auto target = RedisClient::connect(config.redis, *target_creds, io_timeout);
  if (!target.ok())
    return (target.status().wrap("connect to the target")).as(ErrorKind::kUnavailable);
  auto master = RedisClient::connect(config.master, *master_creds, io_timeout);
  if (!master.ok())
    return (master.status().wrap("connect to the master to check its backlog (--master, "
                                 "--master-auth-file)"))
        .as(ErrorKind::kUnavailable);

  auto offset = settled_offset(*target, forwarded);
  if (!offset.ok()) return (offset.status()).as(ErrorKind::kUnavailable);
  auto repl = master->info("replication");
  if (!repl.ok())
    return (repl.status().wrap("read the master's INFO replication")).as(ErrorKind::kUnavailable);
  if (Status s = check_backlog(*repl, replid, *offset + 1, config.master); !s.ok())
    return (s).as(ErrorKind::kRefused);
  auto before = sync_counters(*master);
  if (!before.ok()) return (before.status()).as(ErrorKind::kUnavailable);
  auto target_before = target->info("replication");
  if (!target_before.ok())
    return (target_before.status().wrap("read the target's INFO replication"))
        .as(ErrorKind::kUnavailable);

  auto moved = target->command(
      {"REPLICAOF", config.master.host, std::to_string(config.master.port)});
  if (!moved.ok())
    return (moved.status().wrap("point the target at the master")).as(ErrorKind::kFailed);
  link.close();
  auto target_after = wait_link_up(*target, config.master, config.io_timeout);
  if (!target_after.ok()) return (target_after.status()).as(ErrorKind::kUnavailable);
  auto after = sync_counters(*master);
  if (!after.ok()) return (after.status()).as(ErrorKind::kUnavailable);
  const uint64_t partial = after->partial_ok - before->partial_ok;
  const uint64_t full = after->full - before->full;
  Resync kind = Resync::kUnknown;
  Status judged = judge_target(config.master, info_field(*repl, "master_replid"), *target_before,
                               *target_after, *offset, kind);
  if (judged.ok() && kind == Resync::kUnknown)
    judged = judge_by_counters(config.master, *offset, partial, full);
  std::printf("handoff master=%s offset=%llu partial_resync=%s sync_partial_ok=+%llu "
              "sync_full=+%llu seconds=%.3f\n",
              config.master.to_string().c_str(), static_cast<unsigned long long>(*offset),
              judged.ok() ? "yes" : "no", static_cast<unsigned long long>(partial),
              static_cast<unsigned long long>(full), seconds_since(t0));
  std::fflush(stdout);
  RRS_RETURN_IF_ERROR(judged);
  log::info("the target is a replica of " + config.master.to_string() + ", continued from offset " +
            std::to_string(*offset) + " with a partial resync");
  return {};
}

}  // namespace rrs
