// Restore mode's answer to keys that expire while a follower catches up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
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

  // A guard for a load starting at `now_ms`.
  static TtlGuard starting(int64_t now_ms) {
    TtlGuard g;
    g.loaded_at_ms = now_ms;
    g.guard_at_ms = now_ms + std::chrono::duration_cast<std::chrono::milliseconds>(kHold).count();
    return g;
  }
  // A record expiring at `expire_at_ms` (-1: never) loaded at `now_ms`:
  // held (listed, and `expire_at_ms` becomes guard_at_ms) if it expires
  // within kWindow, expired ones included.
  bool hold(uint32_t db, std::string_view key, int64_t& expire_at_ms, int64_t now_ms) {
    const int64_t window = std::chrono::duration_cast<std::chrono::milliseconds>(kWindow).count();
    if (expire_at_ms < 0 || expire_at_ms > now_ms + window) return false;
    keys.push_back({db, std::string(key), expire_at_ms});
    expire_at_ms = guard_at_ms;
    return true;
  }
};

}  // namespace rrs
