// TTL-less plain strings gathered by hash slot into MSETs, for the cluster
// load path, for small values. A cluster node takes a multi-key command
// only when its keys share a slot, and one MSET of many keys costs the node
// about a third less CPU per key than a SET each (fewer commands to parse
// and dispatch, one reply; docs/cluster.md). Redis 7.0 writes its RDB in hash order, so
// a slot's keys are spread over the whole table: a group fills only if it
// is held across batches, up to a byte budget, then every group goes.
//
// The pairs wait in one arena, already RESP-encoded, with a list of entries
// per slot: memory allocated once and reused, since fresh pages cost more
// here than the copies do (a page fault each 4 KiB).
//
// An MSET the target does not take as a whole (ASK or TRYAGAIN while its
// slot migrates, CLUSTERDOWN) is split back into one SET per key:
// split_mset().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/cluster/node_pipeline.h"
#include "common/base/status.h"
#include "proto/hash_slot.h"

namespace rrs {

class SlotMsets {
 public:
  // A group of this many keys goes at once (MsetBuilder's bound).
  static constexpr uint32_t kMaxKeys = 128;
  // A larger pair (key and value) goes on its own, as a SET: its command's
  // cost is small beside its bytes. 1000-byte values measured no faster
  // gathered, and the arena's memory is not free.
  static constexpr size_t kMaxPairBytes = 512;

  // `budget`: the most held_bytes() may reach before the caller sends every
  // group (plus one pair); reserved on first use, so the arena never moves.
  explicit SlotMsets(size_t budget) : budget_(budget), groups_(kHashSlots) {}

  // Whether a pair is small enough to gather.
  static bool gathers(std::string_view key, std::string_view value) {
    return key.size() + value.size() <= kMaxPairBytes;
  }
  // Adds a record that gathers() to its slot's group (copied); true when
  // that group is full and should go now (flush(slot)). The caller sends
  // every group once over_budget(), which keeps the arena far below the
  // 4 GiB its offsets reach.
  bool add(uint16_t slot, uint64_t index, std::string_view key, std::string_view value);
  // Memory held: the arena (with the pairs of groups already sent, until
  // every group is empty) and the entries.
  size_t held_bytes() const { return arena_.size() + entries_.size() * sizeof(Entry); }
  bool over_budget() const { return held_bytes() > budget_; }
  // Slots whose group holds something, in slot order.
  std::vector<uint16_t> filled() const;
  // Appends the MSET of `slot`'s group to `out`, empties the group, and
  // returns the command that writes it, but for its wire (in `out`).
  RoutedCommand flush(uint16_t slot, std::string& out);

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // One pair in the arena: $<len>\r\n<key>\r\n$<len>\r\n<value>\r\n.
  struct Entry {
    uint64_t index;   // its table record
    uint32_t at;      // in arena_
    uint32_t size;    // both bulks
    uint32_t key_at;  // the key's bytes
    uint32_t key_len;
    uint32_t next;  // the group's next entry, or kNone
  };
  struct Group {
    uint32_t first = kNone, last = kNone;
    uint32_t keys = 0;
    uint64_t bytes = 0;  // keys + values
  };

  size_t budget_;
  std::vector<Group> groups_;  // by slot
  std::string arena_;
  std::vector<Entry> entries_;
  uint32_t live_ = 0;  // groups holding something
};

// An MSET command (SlotMsets::flush's, possibly after hops) as one SET per
// key, each carrying its own record index and the MSET's hop count. An
// error if the wire is not an MSET of `indices.size()` pairs: a bug, since
// the client wrote it.
Result<std::vector<RoutedCommand>> split_mset(const RoutedCommand& mset);

}  // namespace rrs
