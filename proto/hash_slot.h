// The Redis Cluster hash slot of a key, as every cluster node computes it:
// CRC-16 (proto/crc16.h) of the key's hash tag, or of the whole key when it
// has none, mod 16384. A record read from one shard's table goes to the
// target node that owns this slot.
#pragma once

#include <cstdint>
#include <string_view>

namespace rrs {

// Slots 0 .. kHashSlots - 1.
constexpr uint16_t kHashSlots = 16384;

// The bytes the slot is computed from: those between the first '{' and the
// first '}' after it, if there are any; otherwise (no '{', no '}' after it,
// or "{}") the whole key. "{user1}.a" -> "user1", "a{}{b}" -> "a{}{b}",
// "a{{b}}" -> "{b". Keys are binary: NULs are ordinary bytes.
std::string_view hash_tag(std::string_view key);

// crc16(hash_tag(key)) mod kHashSlots.
uint16_t hash_slot(std::string_view key);

}  // namespace rrs
