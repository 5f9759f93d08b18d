// Constants of the Redis RDB format (versions 6 to 12: Redis 2.6 to 7.4),
// as the master writes them on disk and on a replication link. Names follow
// Redis's rdb.h so they can be looked up there.
#pragma once

#include <cstdint>
#include <string_view>

namespace rrs::rdb {

inline constexpr std::string_view kMagic = "REDIS";  // then 4 ASCII digits: the version
inline constexpr size_t kHeaderSize = 9;
inline constexpr uint16_t kMinVersion = 6;
inline constexpr uint16_t kMaxVersion = 12;
inline constexpr uint16_t kFirstVersionWithChecksum = 5;

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

// Opcodes: bytes in the type position that are not keys.
enum Opcode : uint8_t {
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

// The name of a type or opcode for messages ("zset2", "opcode MODULE_AUX"),
// or nullptr when the byte is neither.
const char* type_name(uint8_t type);

// Appends `n` in RDB length encoding.
void append_length(std::string& out, uint64_t n);

}  // namespace rrs::rdb
