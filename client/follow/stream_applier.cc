#include "client/follow/stream_applier.h"

#include <charconv>
#include <optional>

#include "client/client_metrics.h"

namespace rrs {
namespace {

std::string printable_name(std::string_view arg) {
  std::string out(arg.substr(0, 64));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

// The DB a SELECT switches to, if it is one.
std::optional<uint32_t> selected_db(std::span<const std::string_view> args) {
  if (args.size() != 2 || !is_command(args[0], "select")) return std::nullopt;
  uint32_t db = 0;
  auto [p, ec] = std::from_chars(args[1].data(), args[1].data() + args[1].size(), db);
  if (ec != std::errc() || p != args[1].data() + args[1].size()) return std::nullopt;
  return db;
}

std::string reply_text(const redisReply* r) {
  return r->str ? std::string(r->str, std::min<size_t>(r->len, 300)) : "(no text)";
}

}  // namespace

StreamApplier::StreamApplier(RedisClient target, uint64_t position, uint32_t stream_db)
    : target_(std::move(target)), applied_(position) {
  // A replica source's stream goes on in its master's DB without a SELECT.
  if (stream_db == 0) return;
  const std::string db = std::to_string(stream_db);
  const std::string_view select[] = {"SELECT", db};
  queue(select, position, Expect::kOk, 0);
}

void StreamApplier::queue(std::span<const std::string_view> args, uint64_t end, Expect expect,
                          uint32_t commands) {
  target_.append(args);
  if (auto db = selected_db(args)) sent_db_ = *db;
  in_flight_.push_back({printable_name(args[0]), end, expect, sent_db_, commands});
}

Status StreamApplier::add(const resp::Command& cmd, uint64_t end) {
  const auto& args = cmd.args;
  RRS_ASSIGN_OR_RETURN(TransactionBlocks::Next next, blocks_.add(args, end));
  switch (next) {
    case TransactionBlocks::Next::kHeld: return {};
    case TransactionBlocks::Next::kChatter:
      // Nothing is sent; it counts as applied once everything before it is.
      in_flight_.push_back({"", end, Expect::kAny, sent_db_, 0});
      return {};
    case TransactionBlocks::Next::kCommand: queue(args, end, Expect::kAny, 1); return {};
    case TransactionBlocks::Next::kBlock: break;
  }
  const std::vector<std::vector<std::string>> block = blocks_.take_block();
  std::vector<std::string_view> views = {"MULTI"};
  queue(views, end, Expect::kOk, 0);
  for (const auto& queued : block) {
    views.assign(queued.begin(), queued.end());
    queue(views, end, Expect::kQueued, 0);
  }
  views.assign({"EXEC"});
  queue(views, end, Expect::kExec, static_cast<uint32_t>(block.size()));
  return {};
}

Status StreamApplier::check(const Sent& s, const redisReply* r) const {
  auto refused = [&](const std::string& why) {
    return Status::error("apply the replication stream",
                         "the target refused " + s.name + " (ending at stream offset " +
                             std::to_string(s.end) + "): " + why +
                             ". Stopping rather than let the replica diverge further: it holds "
                             "the stream up to that command, and the commands pipelined after it "
                             "in the same batch (up to offset " +
                             std::to_string(in_flight_.back().end) +
                             (why.starts_with("NOPERM")
                                  ? "). The target's Redis user lacks that right: --follow "
                                    "needs +@write and the other commands the master "
                                    "replicates (SECURITY.md)"
                                  : "). Is the target the same Redis version as the master, "
                                    "with the same modules?"));
  };
  if (r->type == REDIS_REPLY_ERROR) return refused(reply_text(r));
  if (s.expect == Expect::kExec) {
    if (r->type != REDIS_REPLY_ARRAY) return refused("EXEC answered " + reply_text(r));
    for (size_t i = 0; i < r->elements; ++i)
      if (r->element[i]->type == REDIS_REPLY_ERROR)
        return refused("command " + std::to_string(i + 1) +
                       " of the transaction failed: " + reply_text(r->element[i]));
  }
  return {};
}

Status StreamApplier::send() {
  return target_.send_appended().wrap("apply the replication stream").as(ErrorKind::kUnavailable);
}

Status StreamApplier::collect() {
  // A MULTI block only counts once its EXEC succeeds.
  Status failed;
  for (const Sent& s : in_flight_) {
    if (s.name.empty()) {  // a dropped PING/REPLCONF: nothing was sent
      if (failed.ok()) applied_ = s.end;
      continue;
    }
    auto reply = target_.get_reply();
    if (!reply.ok())
      return reply.status().wrap("apply the replication stream").as(ErrorKind::kUnavailable);
    if (!failed.ok()) continue;  // drain the replies of what was sent after the failure
    if (Status c = check(s, reply->get()); !c.ok()) {
      failed = c;
      continue;
    }
    if (s.expect == Expect::kAny || s.expect == Expect::kExec) {
      applied_ = s.end;
      db_ = s.db_after;
      commands_ += s.commands;
      client_metrics().commands_applied.add(s.commands);
    }
  }
  in_flight_.clear();
  return failed;
}

Status StreamApplier::per_key(
    const std::vector<const TtlGuard::Key*>& keys,
    const std::function<std::vector<std::string>(const TtlGuard::Key&)>& command,
    const std::function<Status(size_t, const redisReply*)>& on_reply) {
  const std::string step = "give back the TTLs the guard held";
  // What each reply answers: a key's index, or a SELECT.
  constexpr size_t kSelect = SIZE_MAX;
  std::vector<size_t> replies;
  uint32_t db = db_;
  auto select = [&](uint32_t to) {
    const std::string n = std::to_string(to);
    target_.append({"SELECT", n});
    replies.push_back(kSelect);
    db = to;
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i]->db != db) select(keys[i]->db);
    const std::vector<std::string> args = command(*keys[i]);
    target_.append(std::vector<std::string_view>(args.begin(), args.end()));
    replies.push_back(i);
  }
  if (db != db_) select(db_);
  RRS_RETURN_IF_ERROR(target_.send_appended().wrap(step).as(ErrorKind::kUnavailable));
  Status failed;
  for (size_t what : replies) {
    auto reply = target_.get_reply();
    if (!reply.ok()) return reply.status().wrap(step).as(ErrorKind::kUnavailable);
    if (!failed.ok()) continue;  // read every reply before returning
    if ((*reply)->type == REDIS_REPLY_ERROR)
      failed = Status::error(step, "the target answered " + reply_text(reply->get()));
    else if (what != kSelect)
      failed = on_reply(what, reply->get());
  }
  return failed;
}

Result<uint64_t> StreamApplier::restore_ttls(const TtlGuard& guard) {
  if (guard.keys.empty()) return uint64_t{0};
  std::vector<const TtlGuard::Key*> all, held;
  for (const TtlGuard::Key& k : guard.keys) all.push_back(&k);
  // Which still carry the guard's TTL: the stream changed none of them.
  RRS_RETURN_IF_ERROR(per_key(
      all,
      [](const TtlGuard::Key& k) {
        return std::vector<std::string>{"PEXPIRETIME", k.key};
      },
      [&](size_t i, const redisReply* r) {
        if (r->type == REDIS_REPLY_INTEGER && r->integer == guard.guard_at_ms)
          held.push_back(all[i]);
        return Status();
      }));
  RRS_RETURN_IF_ERROR(per_key(
      held,
      [](const TtlGuard::Key& k) {
        return std::vector<std::string>{"PEXPIREAT", k.key, std::to_string(k.expire_at_ms)};
      },
      [](size_t, const redisReply*) { return Status(); }));
  return uint64_t{held.size()};
}

}  // namespace rrs
