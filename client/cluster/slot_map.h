// The target cluster's slot map: which master owns each hash slot, from a
// node's CLUSTER SLOTS reply (common/redis/cluster_slots.h checks every
// field; here: no slot claimed twice, every master's address known).
// Parsing does no I/O; fetch_slot_map() asks a node.
#pragma once

#include <hiredis/read.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"
#include "proto/hash_slot.h"

namespace rrs {

class SlotMap {
 public:
  static constexpr int kUnowned = -1;

  // From the reply to CLUSTER SLOTS sent to `asked`: a master announced
  // with an empty address (a node that does not know its own IP) is reached
  // where `asked` was.
  static Result<SlotMap> parse(const redisReply& reply, const Endpoint& asked);

  // The masters, in the order the reply first named them.
  const std::vector<Endpoint>& masters() const { return masters_; }
  // Index into masters() of the slot's owner, or kUnowned.
  int owner(uint16_t slot) const { return owner_[slot]; }
  // Slots no master owns: a cluster whose state is not ok.
  uint32_t unowned_slots() const;
  // "0-5460,5461-10922" of the master at `index`.
  std::string ranges_of(int index) const;
  // Records that `slot` now belongs to `master` (a MOVED reply), adding the
  // master if it is new; its index.
  int move(uint16_t slot, const Endpoint& master);

 private:
  // Its index in masters_, added if it is new (at most one per slot: the
  // reply's slots are checked first, and MOVED names one slot at a time).
  int master_index(const Endpoint& master);

  std::vector<Endpoint> masters_;
  std::array<int16_t, kHashSlots> owner_{};
};

// Asks `node` for CLUSTER SLOTS; a node not in cluster mode is kRefused.
Result<SlotMap> fetch_slot_map(RedisClient& node);

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381": the slot and where
// to go; nullopt for any other error (or a malformed one).
struct Redirect {
  bool ask = false;  // ASK: this command only, preceded by ASKING; MOVED: the slot moved
  uint16_t slot = 0;
  Endpoint to;
};
std::optional<Redirect> parse_redirect(std::string_view err);

}  // namespace rrs
