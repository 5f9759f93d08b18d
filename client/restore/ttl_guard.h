// Restore mode's answer to keys that expire while a follower catches up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rrs {

// --follow in restore mode: the target is a master and expires keys by its
// own clock, so a key that expires there before the master's later change to
// it arrives (a TTL extended after the snapshot) would be lost for good.
// Records expiring within kWindow of their load (already expired ones too)
// are restored with the TTL `guard_at` instead, far out, and listed. Once
// the follower has caught up, whatever the master did to them meanwhile
// (a new TTL, a SET, a DEL) has been applied; each one whose TTL is still
// `guard_at` gets its own back (StreamApplier::restore_ttls), so one whose
// time has passed expires on the target as it did on the master.
struct TtlGuard {
  static constexpr std::chrono::minutes kWindow{10};
  static constexpr std::chrono::hours kHold{24};  // guard_at: load start + this
  struct Key {
    uint32_t db;
    std::string key;
    int64_t expire_at_ms;  // its own TTL, given back after catch-up
  };
  int64_t loaded_at_ms = 0;
  int64_t guard_at_ms = 0;
  std::vector<Key> keys;
};

}  // namespace rrs
