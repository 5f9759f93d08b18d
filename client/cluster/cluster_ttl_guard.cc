#include "client/cluster/cluster_ttl_guard.h"

#include <string>
#include <vector>

namespace rrs {
namespace {

constexpr const char* kStep = "give back the TTLs the guard held";

using Keys = std::vector<const TtlGuard::Key*>;

// Sends `command(key)` for each key in one pipelined round and hands each
// reply to `on_reply`; an error reply fails the round (after reading all).
template <class Command, class OnReply>
Status per_key(RedisClient& master, const Keys& keys, Command command, OnReply on_reply) {
  for (const TtlGuard::Key* k : keys) {
    const std::vector<std::string> args = command(*k);
    master.append(std::vector<std::string_view>(args.begin(), args.end()));
  }
  RRS_RETURN_IF_ERROR(master.send_appended().wrap(kStep).as(ErrorKind::kUnavailable));
  Status failed;
  for (const TtlGuard::Key* k : keys) {
    auto reply = master.get_reply();
    if (!reply.ok()) return reply.status().wrap(kStep).as(ErrorKind::kUnavailable);
    const redisReply* r = reply->get();
    if (r->type == REDIS_REPLY_ERROR && failed.ok())
      failed = Status::error(kStep, "master " + master.endpoint().to_string() + " answered " +
                                        std::string(r->str, std::min<size_t>(r->len, 300)));
    else if (failed.ok())
      on_reply(k, r);
  }
  return failed;
}

// The keys on one master whose TTL is still the guard's get their own back.
Result<uint64_t> restore_on(RedisClient& master, const Keys& keys, int64_t guard_at_ms) {
  Keys held;
  RRS_RETURN_IF_ERROR(per_key(
      master, keys,
      [](const TtlGuard::Key& k) {
        return std::vector<std::string>{"PEXPIRETIME", k.key};
      },
      [&](const TtlGuard::Key* k, const redisReply* r) {
        if (r->type == REDIS_REPLY_INTEGER && r->integer == guard_at_ms) held.push_back(k);
      }));
  if (held.empty()) return uint64_t{0};
  RRS_RETURN_IF_ERROR(per_key(
      master, held,
      [](const TtlGuard::Key& k) {
        return std::vector<std::string>{"PEXPIREAT", k.key, std::to_string(k.expire_at_ms)};
      },
      [](const TtlGuard::Key*, const redisReply*) {}));
  return uint64_t{held.size()};
}

}  // namespace

Result<uint64_t> restore_guarded_ttls(const ClusterTarget& target, const TtlGuard& guard) {
  RRS_ASSIGN_OR_RETURN(SlotMap map, target.refresh_map());
  std::vector<Keys> per_master(map.masters().size());
  for (const TtlGuard::Key& k : guard.keys)
    if (const int owner = map.owner(hash_slot(k.key)); owner != SlotMap::kUnowned)
      per_master[static_cast<size_t>(owner)].push_back(&k);
  uint64_t restored = 0;
  for (size_t i = 0; i < per_master.size(); ++i) {
    if (per_master[i].empty()) continue;
    auto master = RedisClient::connect(map.masters()[i], target.credentials(), target.io_timeout());
    if (!master.ok()) return master.status().wrap(kStep).as(ErrorKind::kUnavailable);
    RRS_ASSIGN_OR_RETURN(uint64_t n, restore_on(*master, per_master[i], guard.guard_at_ms));
    restored += n;
  }
  return restored;
}

}  // namespace rrs
