// TTL-less plain strings gathered by hash slot into MSETs, for the cluster
// load path, for small values. A cluster node takes a multi-key command
// only when its keys share a slot, and one MSET of many keys costs the node
// about a third less CPU per key than a SET each (fewer commands to parse
// and dispatch, one reply; docs/cluster.md). Redis 7.0 writes its RDB in
// hash order, so a slot's keys are spread over the whole table: a group
// fills only if it is held across batches, up to a byte budget, then every
// group goes.
//
// The pairs wait already RESP-encoded in 4 KiB chunks, a list of them per
// slot, carved from one allocation and reused: fresh pages cost more here
// than the copies do (a page fault each 4 KiB), and a slot's pairs lie
// together, so sending its MSET reads memory in order instead of missing
// the cache once a key.
//
// An MSET the target does not take as a whole (ASK or TRYAGAIN while its
// slot migrates, CLUSTERDOWN) is split back into one SET per key:
// split_mset().
#pragma once

#include <cstdint>
#include <memory>
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
  // gathered, and the memory they wait in is not free.
  static constexpr size_t kMaxPairBytes = 512;

  // `budget`: the bytes of chunks to gather in (at least one chunk).
  explicit SlotMsets(size_t budget);

  // Whether a pair is small enough to gather.
  static bool gathers(std::string_view key, std::string_view value) {
    return key.size() + value.size() <= kMaxPairBytes;
  }
  // Adds a record that gathers() to its slot's group (copied); true when
  // that group is full and should go now (flush(slot)). Only while not
  // over_budget(): the caller sends every group once it is.
  bool add(uint16_t slot, uint64_t index, std::string_view key, std::string_view value);
  // Bytes of the chunks groups hold.
  size_t held_bytes() const { return (chunks_ - free_.size()) * kChunkBytes; }
  // No chunk left for a group that needs one.
  bool over_budget() const { return free_.empty(); }
  // Slots whose group holds something, in slot order.
  std::vector<uint16_t> filled() const;
  // Appends the MSET of `slot`'s group to `out`, empties the group, and
  // returns the command that writes it, but for its wire (in `out`).
  RoutedCommand flush(uint16_t slot, std::string& out);

  static constexpr size_t kChunkBytes = 4096;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // Each pair in a chunk: this, then $<len>\r\n<key>\r\n$<len>\r\n<value>\r\n.
  struct PairHeader {
    uint64_t index;    // its table record
    uint32_t size;     // both bulks
    uint16_t key_at;   // the key's bytes, from the first bulk's start
    uint16_t key_len;  // at most kMaxPairBytes
  };
  struct Group {
    uint32_t first = kNone, last = kNone;  // chunks
    uint32_t keys = 0;
    uint64_t bytes = 0;  // keys + values
  };
  char* chunk(uint32_t c) { return memory_.get() + size_t{c} * kChunkBytes; }

  size_t chunks_;
  std::vector<Group> groups_;       // by slot
  std::unique_ptr<char[]> memory_;  // the chunks, allocated on first use
  std::vector<uint32_t> next_;      // by chunk: its group's next chunk
  std::vector<uint32_t> used_;      // by chunk: bytes written
  std::vector<uint32_t> free_;      // chunks no group holds
};

// An MSET command (SlotMsets::flush's, possibly after hops) as one SET per
// key, each carrying its own record index and the MSET's hop count. An
// error if the wire is not an MSET of `indices.size()` pairs: a bug, since
// the client wrote it.
Result<std::vector<RoutedCommand>> split_mset(const RoutedCommand& mset);

}  // namespace rrs
