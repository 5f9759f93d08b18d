// The master's stream cut into the units a cluster applies whole, and where
// each unit goes. A unit is one command, or a MULTI ... EXEC block (sent
// wrapped, so the target applies it all or nothing); PING, REPLCONF and
// SELECT 0 (the master talking to its replica) are units with no commands.
//
//   route_unit: every key in one slot      -> that slot's master
//               FLUSHALL, FLUSHDB alone    -> the source shard's slots emptied
//                                             (client/cluster/keyless_units.h)
//               no keys, tip all_shards/
//               all_nodes (FUNCTION LOAD),
//               alone                      -> every master
//               no commands                -> nowhere (applied as it stands)
//               anything else              -> kRefused: the follower stops,
//                                             naming the command and offset
//
// A cluster has only DB 0: SELECT n (n != 0) is kRefused. No I/O here but
// through CommandKeys.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/cluster/command_keys.h"
#include "client/follow/transaction_blocks.h"

namespace rrs {

struct StreamUnit {
  // Owned copies: the parser's views die with its next feed.
  std::vector<std::vector<std::string>> commands;
  bool transaction = false;  // a MULTI ... EXEC block: sent between MULTI and EXEC
  uint64_t end = 0;          // stream position after it
  // "SET" or "MULTI/EXEC (3 commands, the first SET)": what messages call it.
  std::string describe() const;
  // Its RESP bytes (a block between MULTI and EXEC), and the replies it gets.
  std::string wire(uint32_t& replies) const;
};

class UnitBuilder {
 public:
  // Takes the next command, `end` the stream position after it: a finished
  // unit, or nullopt while a MULTI block is open.
  Result<std::optional<StreamUnit>> add(std::span<const std::string_view> args, uint64_t end);
  bool in_block() const { return blocks_.open(); }

 private:
  TransactionBlocks blocks_;
};

struct UnitRoute {
  enum class Where { kNowhere, kSlot, kAllMasters, kShardSlots } where = Where::kNowhere;
  uint16_t slot = 0;
  // More than one distinct key: a slot migration can split it (TRYAGAIN).
  bool multi_key = false;
};

// Where `unit` goes, by the target's key specs; kRefused when it cannot be
// applied to a cluster as one unit (keys in several slots, or no keys and
// not meant for every master).
Result<UnitRoute> route_unit(const StreamUnit& unit, CommandKeys& keys);

}  // namespace rrs
