// Constants of the RDB format as Redis (RDB 1 to 12: Redis 1.0 to 8.0) and
// Valkey (RDB 80: Valkey 9.0 and 9.1) write it on disk and on a replication
// link. Names follow Redis's and Valkey's rdb.h so they can be looked up there.
//
// What each Redis version added (rdb.h and rdb.c history):
//   1  Redis 1.0 to 2.2   types 0-4, opcodes EXPIRETIME (seconds), SELECTDB, EOF
//   2  Redis 2.4          zipmap, ziplist list, intset, ziplist zset (9-12)
//   3  (2.6 development)  EXPIRETIME_MS
//   4  (2.6 development)  ziplist hash (13)
//   5  (2.6 development)  the CRC-64 after EOF
//   6  Redis 2.6 to 3.0   ziplists gain 24-bit and 4-bit integer entries
//   7  Redis 3.2          quicklist (14), AUX, RESIZEDB
//   8  Redis 4.0          zset2 (5), modules (6, 7), 64-bit lengths
//   9  Redis 5.0          streams (15), MODULE_AUX, IDLE, FREQ
//   10 Redis 7.0          listpacks (16-19), FUNCTION2 (and its pre-GA form)
//   11 Redis 7.2          set listpack (20), stream v3 (21)
//   12 Redis 7.4 and 8.0  hashes with field TTLs (22-25), SLOT_INFO
// Each version's loader reads every older version; a value type that came
// later is not a type in an RDB of an older version (first_version()). The
// opcodes are another matter: the servers' loaders (rdb.c's rdbLoad in
// Redis 3.2 to 8.0 and in Valkey) dispatch on the opcode byte alone and
// never ask the header's version, so an opcode is read in an RDB of any
// version whose numbering has it (is_loadable()): an RDB 6 with AUX fields
// loads.
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
inline constexpr uint16_t kMinVersion = 1;
inline constexpr uint16_t kMaxRedisVersion = 12;     // Redis 7.4 to 8.0
inline constexpr uint16_t kFirstValkeyVersion = 80;  // Valkey's own numbering starts here
inline constexpr uint16_t kMaxValkeyVersion = 80;    // Valkey 9.0 and 9.1
// Before RDB 5 the file ends at the EOF opcode: no CRC-64 follows it, and a
// loader reads none (rdb.c's rdbLoad: "if (rdbver >= 5)").
inline constexpr uint16_t kFirstVersionWithChecksum = 5;
// Before RDB 3 an expiry is EXPIRETIME: whole seconds, a signed 32-bit count.
inline constexpr uint16_t kFirstVersionWithExpireMs = 3;
// Before RDB 7 no server writes AUX fields or RESIZEDB hints (a loader
// reads them in any version: is_loadable).
inline constexpr uint16_t kFirstVersionWithAux = 7;
// Before RDB 10 no server writes function libraries (FUNCTION2).
inline constexpr uint16_t kFirstVersionWithFunctions = 10;

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
// Versions this parser reads: Redis's 1..12 and Valkey's 80.
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

// The first RDB version whose format has `type` as a value type or opcode
// (the table at the top; Valkey's type 22 and opcode 243 are 80), or 0 for
// a byte that is neither in any version.
uint16_t first_version(uint8_t type, uint16_t version);
// Whether an RDB of `version` can hold `type` as a value type or opcode: it
// is in that version's numbering (type_name) and not newer than the version.
inline bool is_in_format(uint8_t type, uint16_t version) {
  const uint16_t first = first_version(type, version);
  return first != 0 && first <= version;
}
// The opcodes Redis's and Valkey's rdbLoad read in an RDB of any version:
// EXPIRETIME_MS, AUX, RESIZEDB, IDLE, FREQ, MODULE_AUX, FUNCTION2 and
// SLOT_INFO (each loader's opcode chain tests the byte, never rdbver). Not
// the 7.0 release-candidate FUNCTION: only Redis 7.0 loads it at all (7.2 on
// and Valkey refuse it in every version), so it stays where 7.0's release
// candidates wrote it, RDB 10 and later.
bool is_opcode_of_any_version(uint8_t type);
// Whether the parser reads `type` in an RDB of `version`, as the servers
// load it: a value type in the versions that have it (is_in_format), an
// opcode above in any version whose numbering names it (type_name: Valkey's
// 80 has no Redis type 23 to 243, Redis's have no SLOT_IMPORT), any other
// opcode from the version it came with.
inline bool is_loadable(uint8_t type, uint16_t version) {
  if (type_name(type, version) == nullptr) return false;
  return is_opcode_of_any_version(type) || is_in_format(type, version);
}

// Appends `n` in RDB length encoding.
void append_length(std::string& out, uint64_t n);

}  // namespace rrs::rdb
