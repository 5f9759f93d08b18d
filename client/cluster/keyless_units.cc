#include "client/cluster/keyless_units.h"

#include <string>
#include <vector>

namespace rrs {
namespace {

constexpr const char* kStep = "flush a source shard's slots on the target";
// Keys fetched and deleted per round trip.
constexpr const char* kBatch = "1000";

// Which of `slots` hold keys on `master`: one pipelined round.
Result<std::vector<uint16_t>> slots_with_keys(RedisClient& master,
                                              const std::vector<uint16_t>& slots) {
  std::vector<std::string> numbers;
  numbers.reserve(slots.size());
  for (uint16_t s : slots) {
    numbers.push_back(std::to_string(s));
    master.append({"CLUSTER", "COUNTKEYSINSLOT", numbers.back()});
  }
  RRS_RETURN_IF_ERROR(master.send_appended());
  std::vector<uint16_t> used;
  Status failed;
  for (uint16_t s : slots) {
    RRS_ASSIGN_OR_RETURN(ReplyPtr r, master.get_reply());
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) used.push_back(s);
    if (r->type == REDIS_REPLY_ERROR && failed.ok())
      failed = Status::error(kStep, "CLUSTER COUNTKEYSINSLOT on " + master.endpoint().to_string() +
                                        ": " + std::string(r->str, r->len));
  }
  RRS_RETURN_IF_ERROR(failed);
  return used;
}

// Deletes the keys of `slot` on `master` until none is left.
Result<uint64_t> empty_slot(RedisClient& master, uint16_t slot) {
  const std::string number = std::to_string(slot);
  uint64_t deleted = 0;
  while (true) {
    RRS_ASSIGN_OR_RETURN(ReplyPtr keys,
                         master.command({"CLUSTER", "GETKEYSINSLOT", number, kBatch}));
    if (keys->type != REDIS_REPLY_ARRAY)
      return Status::error(kStep, "CLUSTER GETKEYSINSLOT did not answer an array")
          .as(ErrorKind::kBadData);
    if (keys->elements == 0) return deleted;
    std::vector<std::string_view> unlink = {"UNLINK"};
    for (size_t i = 0; i < keys->elements; ++i) {
      const redisReply* k = keys->element[i];
      if (k->type != REDIS_REPLY_STRING)
        return Status::error(kStep, "CLUSTER GETKEYSINSLOT answered a key that is not a string")
            .as(ErrorKind::kBadData);
      unlink.emplace_back(k->str, k->len);
    }
    RRS_RETURN_IF_ERROR(master.command(unlink).status());
    deleted += keys->elements;
  }
}

}  // namespace

Result<uint64_t> flush_slots(const ClusterTarget& target, const SlotRanges& slots) {
  RRS_ASSIGN_OR_RETURN(SlotMap map, target.refresh_map());
  std::vector<std::vector<uint16_t>> per_master(map.masters().size());
  for (const SlotRange& r : slots.ranges())
    for (uint32_t s = r.first; s <= r.last; ++s)
      if (const int owner = map.owner(static_cast<uint16_t>(s)); owner != SlotMap::kUnowned)
        per_master[static_cast<size_t>(owner)].push_back(static_cast<uint16_t>(s));
  uint64_t deleted = 0;
  for (size_t i = 0; i < per_master.size(); ++i) {
    if (per_master[i].empty()) continue;
    auto master = RedisClient::connect(map.masters()[i], target.credentials(), target.io_timeout());
    if (!master.ok()) return master.status().wrap(kStep).as(ErrorKind::kUnavailable);
    RRS_ASSIGN_OR_RETURN(std::vector<uint16_t> used, slots_with_keys(*master, per_master[i]));
    for (uint16_t s : used) {
      RRS_ASSIGN_OR_RETURN(uint64_t n, empty_slot(*master, s));
      deleted += n;
    }
  }
  return deleted;
}

namespace {

// FUNCTION LOAD comes once from every source shard that ran it (as a
// cluster client sends it to every master): the target's masters have the
// library after the first, and a plain LOAD would fail on them the second
// time. The source master that sent it now holds that library's code, which
// REPLACE gives the target whatever it held: the same end, every time.
std::vector<std::string_view> repeatable(const std::vector<std::string>& command) {
  std::vector<std::string_view> args(command.begin(), command.end());
  const bool load = args.size() >= 3 && lowercase(args[0]) == "function" &&
                    lowercase(args[1]) == "load";
  if (load && lowercase(args[2]) != "replace") args.insert(args.begin() + 2, "REPLACE");
  return args;
}

// FUNCTION DELETE comes once from every source shard too: after the first,
// the library is gone from the target's masters, which is what the later
// ones want. Their "Library not found" is the same end, not a failure.
bool already_done(const std::vector<std::string_view>& args, const Status& refusal) {
  return args.size() >= 3 && lowercase(args[0]) == "function" && lowercase(args[1]) == "delete" &&
         refusal.message().find("Library not found") != std::string::npos;
}

}  // namespace

Status send_to_every_master(const ClusterTarget& target, const StreamUnit& unit) {
  RRS_ASSIGN_OR_RETURN(SlotMap map, target.refresh_map());
  const std::vector<std::string_view> args = repeatable(unit.commands[0]);
  for (const Endpoint& m : map.masters()) {
    auto master = RedisClient::connect(m, target.credentials(), target.io_timeout());
    if (!master.ok()) return master.status().as(ErrorKind::kUnavailable);
    if (auto r = master->command(args); !r.ok() && !already_done(args, r.status()))
      return Status::error("apply the replication stream to the cluster",
                           "master " + m.to_string() + " refused " + unit.describe() +
                               " (ending at stream offset " + std::to_string(unit.end) +
                               ", for every master): " + r.status().message() +
                               ". Masters before it in the slot map applied it")
          .as(r.status().kind());
  }
  return {};
}

}  // namespace rrs
