// Compares one key as the source and the target hold it: the first thing
// that differs, in the order type, value, TTL, hash field TTLs. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "client/verify/key_state.h"

namespace rrs::verify {

struct Difference {
  std::string what;    // "type", "value", "ttl", "field-ttl", "missing", "extra"
  std::string source;  // what the source holds there, raw bytes (report.h escapes)
  std::string target;  // what the target holds there
};

// nullopt when the source's `s` and the target's `t` are the same. `s` must
// exist (one that went between SCAN and the read is the caller's to skip).
// TTLs (PTTL, read on the two sides moments apart) and hash field expiries
// may differ by up to `ttl_tolerance_ms`.
std::optional<Difference> compare_key(const KeyState& s, const KeyState& t,
                                      int64_t ttl_tolerance_ms);

}  // namespace rrs::verify
