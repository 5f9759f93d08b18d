#include "client/cluster/stream_units.h"

#include <charconv>

#include "common/base/log.h"
#include "proto/hash_slot.h"
#include "proto/resp_writer.h"

namespace rrs {
namespace {

Status refused(const StreamUnit& unit, const std::string& why) {
  return Status::error("apply the replication stream to the cluster",
                       unit.describe() + " ending at stream offset " + std::to_string(unit.end) +
                           " " + why + ". Stopping before it: the target holds the stream up to it")
      .as(ErrorKind::kRefused);
}

}  // namespace

std::string StreamUnit::describe() const {
  if (transaction)
    return "MULTI/EXEC (" + std::to_string(commands.size()) + " commands, the first " +
           (commands.empty() ? std::string("-") : log::printable(commands[0][0])) + ")";
  if (commands.empty()) return "(replication chatter)";
  return log::printable(commands[0][0].substr(0, 64));
}

std::string StreamUnit::wire(uint32_t& replies) const {
  std::string out;
  if (transaction) resp::append_command(out, {"MULTI"});
  for (const auto& command : commands) {
    const std::vector<std::string_view> args(command.begin(), command.end());
    resp::append_command(out, args);
  }
  if (transaction) resp::append_command(out, {"EXEC"});
  replies = static_cast<uint32_t>(commands.size()) + (transaction ? 2 : 0);
  return out;
}

Result<std::optional<StreamUnit>> UnitBuilder::add(std::span<const std::string_view> args,
                                                   uint64_t end) {
  if (args.empty()) return std::optional<StreamUnit>();
  StreamUnit one;
  one.end = end;
  // SELECT 0 is the master selecting the one DB a cluster has: chatter.
  const bool select_0 = is_command(args[0], "select") && args.size() == 2 && args[1] == "0";
  if (!select_0) {
    if (is_command(args[0], "select")) {
      one.commands.emplace_back(args.begin(), args.end());
      return refused(one, "switches to another DB; a cluster has only DB 0");
    }
    // A key migrating into this shard from another (MIGRATE sends it, and the
    // other shard's stream DELs it once this is applied). Each shard's stream
    // is followed on its own, so nothing orders that DEL after this on the
    // target: applied in the other order, the key would be lost.
    if (is_command(args[0], "restore-asking")) {
      one.commands.emplace_back(args.begin(), args.end());
      return refused(one, "moves a key into this source shard: the source cluster is being "
                          "resharded, and its shards' streams cannot be kept in order across a "
                          "slot migration. Follow again with --flush once the migration is done");
    }
  }
  if (select_0) return blocks_.open() ? std::optional<StreamUnit>() : std::optional(std::move(one));
  RRS_ASSIGN_OR_RETURN(TransactionBlocks::Next next, blocks_.add(args, end));
  switch (next) {
    case TransactionBlocks::Next::kHeld: return std::optional<StreamUnit>();
    case TransactionBlocks::Next::kChatter: break;
    case TransactionBlocks::Next::kCommand:
      one.commands.emplace_back(args.begin(), args.end());
      break;
    case TransactionBlocks::Next::kBlock:
      one.commands = blocks_.take_block();
      one.transaction = !one.commands.empty();  // an empty block applies nothing
      break;
  }
  return std::optional<StreamUnit>(std::move(one));
}

Result<UnitRoute> route_unit(const StreamUnit& unit, CommandKeys& keys) {
  UnitRoute route;
  if (unit.commands.empty()) return route;
  // The source master emptied itself: its shard's slots, not the target.
  if (!unit.transaction &&
      (is_command(unit.commands[0][0], "flushall") || is_command(unit.commands[0][0], "flushdb"))) {
    route.where = UnitRoute::Where::kShardSlots;
    return route;
  }
  std::optional<uint16_t> slot;
  std::optional<std::string> first_key;
  bool all_masters = false;
  for (const auto& command : unit.commands) {
    const std::vector<std::string_view> args(command.begin(), command.end());
    RRS_ASSIGN_OR_RETURN(CommandKeysOf of, keys.keys_of(args));
    if (of.keys.empty() && of.all_masters) all_masters = true;
    for (const std::string& k : of.keys) {
      const uint16_t s = hash_slot(k);
      if (slot && *slot != s)
        return refused(unit, "has keys in slots " + std::to_string(*slot) + " and " +
                                 std::to_string(s) +
                                 ", which no one master of the target cluster holds together");
      slot = s;
      if (!first_key)
        first_key = k;
      else if (*first_key != k)
        route.multi_key = true;
    }
  }
  if (all_masters && (unit.commands.size() > 1 || slot))
    return refused(unit, "mixes a command for every master with others");
  if (all_masters) {
    route.where = UnitRoute::Where::kAllMasters;
    return route;
  }
  if (!slot)
    return refused(unit, "has no keys, and the target does not mark it as one for every master "
                         "(request_policy), so no master of the cluster is the one to apply it");
  route.where = UnitRoute::Where::kSlot;
  route.slot = *slot;
  return route;
}

}  // namespace rrs
