// Facts about a Redis DUMP payload that the sidecar needs without decoding it:
//   <type byte> <RDB-encoded value> <RDB version: 2 bytes LE> <CRC64: 8 bytes LE>
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rrs::dump {

inline constexpr size_t kTrailerSize = 10;

// Bytes of the DUMP payload of an RDB value of `value_len` bytes.
inline constexpr uint64_t payload_size(uint64_t value_len) { return 1 + value_len + kTrailerSize; }

// Writes the DUMP payload of a value taken from an RDB of `rdb_version`
// into `out` (payload_size(value.size()) bytes): what DUMP would have
// returned on the master, byte for byte.
void write_payload(uint8_t type, std::string_view value, uint16_t rdb_version, char* out);

// Rewrites the trailer of a DUMP (or FUNCTION DUMP) payload for another RDB
// version: the version and the CRC-64 over the new bytes. A payload shorter
// than a trailer is left as it is.
void restamp(std::span<char> payload, uint16_t rdb_version);

// Whether the payload's trailer CRC-64 matches the bytes before it (what
// RESTORE checks first); false for a payload shorter than a trailer.
bool crc_ok(std::string_view payload);

// The RDB version in the payload's trailer, or nullopt if it is too short.
std::optional<uint16_t> rdb_version(std::string_view payload);

// What FUNCTION RESTORE takes for these libraries' sources (the FUNCTION
// DUMP format: per library the FUNCTION2 opcode and an RDB string, then the
// RDB version and CRC64).
std::string function_restore_payload(const std::vector<std::string>& libraries,
                                     uint16_t rdb_version);

}  // namespace rrs::dump
