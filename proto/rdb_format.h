// Constants of the RDB format as Redis (RDB 6 to 12: Redis 2.6 to 8.0) and
// Valkey (RDB 80: Valkey 9.0 and 9.1) write it on disk and on a replication
// link. Names follow Redis's and Valkey's rdb.h so they can be looked up there.
//
// The two engines share the numbers up to RDB 11 (Redis 7.2, Valkey 7.2 and
// 8.x), then diverge: Redis goes on with 12, Valkey jumps to 80 and writes a
// VALKEY magic. Some type and opcode numbers mean different things in the two
// (type 22, opcode 243): what a number means is decided by the version in
// the header (is_valkey_numbering), never guessed from the bytes.
#pragma once

#include <cstdint>
#include <string_view>

namespace rrs::rdb {

// "REDIS0012" or "VALKEY080": a magic, then the version in ASCII digits, 9 bytes in all.
inline constexpr std::string_view kMagic = "REDIS";         // then 4 digits
inline constexpr std::string_view kValkeyMagic = "VALKEY";  // then 3 digits
inline constexpr size_t kHeaderSize = 9;
static_assert(kMagic.size() + 4 == kHeaderSize && kValkeyMagic.size() + 3 == kHeaderSize);
inline constexpr uint16_t kMinVersion = 6;
inline constexpr uint16_t kMaxRedisVersion = 12;     // Redis 7.4 to 8.0
inline constexpr uint16_t kFirstValkeyVersion = 80;  // Valkey's own numbering starts here
inline constexpr uint16_t kMaxValkeyVersion = 80;    // Valkey 9.0 and 9.1
inline constexpr uint16_t kFirstVersionWithChecksum = 5;

// Valkey numbers its formats from 80 (12 to 79 are Redis's): such an RDB
// carries the VALKEY magic, and its types 22 and up and opcode 243 are
// Valkey's. A DUMP payload has no magic; its version decides alone.
inline constexpr bool is_valkey_numbering(uint16_t version) {
  return version >= kFirstValkeyVersion;
}
// The newest version both engines write the same way (Redis 7.2, Valkey 8).
inline constexpr uint16_t kLastSharedVersion = 11;
// Whether a value of RDB `value_version` may go into an RDB (or be restored
// by a server) of `stream_version`: not newer, and in the same numbering
// unless it predates the split.
inline constexpr bool fits_in(uint16_t value_version, uint16_t stream_version) {
  return value_version <= stream_version &&
         (value_version <= kLastSharedVersion ||
          is_valkey_numbering(value_version) == is_valkey_numbering(stream_version));
}
// Versions this parser reads: Redis's 6..12 and Valkey's 80.
inline constexpr bool is_known_version(uint16_t version) {
  return (version >= kMinVersion && version <= kMaxRedisVersion) ||
         (version >= kFirstValkeyVersion && version <= kMaxValkeyVersion);
}

// Value types: the byte before a key.
enum Type : uint8_t {
  kString = 0,
  kList = 1,
  kSet = 2,
  kZset = 3,
  kHash = 4,
  kZset2 = 5,        // scores as binary doubles
  kModulePreGa = 6,  // Redis 4.0 release candidates: not self-describing
  kModule2 = 7,
  kHashZipmap = 9,
  kListZiplist = 10,
  kSetIntset = 11,
  kZsetZiplist = 12,
  kHashZiplist = 13,
  kListQuicklist = 14,
  kStreamListpacks = 15,
  kHashListpack = 16,
  kZsetListpack = 17,
  kListQuicklist2 = 18,
  kStreamListpacks2 = 19,
  kSetListpack = 20,
  kStreamListpacks3 = 21,
  kHashMetadataPreGa = 22,  // hash with field TTLs, 7.4 release candidates
  kHashListpackExPreGa = 23,
  kHashMetadata = 24,  // hash with field TTLs (7.4)
  kHashListpackEx = 25,
};
// Valkey (RDB 80): a hash with field TTLs, each element field, value and its
// 8-byte expiry (ms, -1: none). Redis's 22 is the 7.4 pre-GA metadata hash.
inline constexpr uint8_t kValkeyHash2 = 22;

// Opcodes: bytes in the type position that are not keys.
enum Opcode : uint8_t {
  kOpValkeySlotImport = 243,  // Valkey RDB 80: slots being imported (atomic slot migration)
  kOpSlotInfo = 244,
  kOpFunction2 = 245,
  kOpFunctionPreGa = 246,  // 7.0 release candidates
  kOpModuleAux = 247,
  kOpIdle = 248,
  kOpFreq = 249,
  kOpAux = 250,
  kOpResizeDb = 251,
  kOpExpireTimeMs = 252,
  kOpExpireTime = 253,
  kOpSelectDb = 254,
  kOpEof = 255,
};

// Length encoding: the top two bits of the first byte.
inline constexpr uint8_t kLen6Bit = 0, kLen14Bit = 1, kLenEncoded = 3;
inline constexpr uint8_t kLen32Bit = 0x80, kLen64Bit = 0x81;
// Special string encodings (kLenEncoded, low six bits).
inline constexpr uint8_t kEncInt8 = 0, kEncInt16 = 1, kEncInt32 = 2, kEncLzf = 3;

// Module value opcodes (module type 2 and MODULE_AUX).
inline constexpr uint64_t kModuleEof = 0, kModuleSint = 1, kModuleUint = 2, kModuleFloat = 3,
                          kModuleDouble = 4, kModuleString = 5;

// Quicklist 2 node containers.
inline constexpr uint64_t kQuicklistPlain = 1, kQuicklistPacked = 2;

// The name of a type or opcode in an RDB of `version` for messages ("zset2",
// "opcode MODULE_AUX"), or nullptr when the byte is neither in that version's
// numbering.
const char* type_name(uint8_t type, uint16_t version);

// Appends `n` in RDB length encoding.
void append_length(std::string& out, uint64_t n);

}  // namespace rrs::rdb
