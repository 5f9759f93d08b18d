#include "proto/rdb_format.h"

#include <string>

namespace rrs::rdb {

const char* type_name(uint8_t type, uint16_t version) {
  if (is_valkey_numbering(version)) {
    if (type == kValkeyHash2) return "hash with field TTLs (Valkey)";
    if (type == kOpValkeySlotImport) return "opcode SLOT_IMPORT";
    if (type > kValkeyHash2 && type < kOpSlotInfo) return nullptr;  // Redis's numbers
  }
  switch (type) {
    case kString: return "string";
    case kList: return "list";
    case kSet: return "set";
    case kZset: return "zset";
    case kHash: return "hash";
    case kZset2: return "zset2";
    case kModulePreGa: return "module (4.0 release candidate format)";
    case kModule2: return "module";
    case kHashZipmap: return "hash zipmap";
    case kListZiplist: return "list ziplist";
    case kSetIntset: return "set intset";
    case kZsetZiplist: return "zset ziplist";
    case kHashZiplist: return "hash ziplist";
    case kListQuicklist: return "list quicklist";
    case kStreamListpacks: return "stream";
    case kHashListpack: return "hash listpack";
    case kZsetListpack: return "zset listpack";
    case kListQuicklist2: return "list quicklist2";
    case kStreamListpacks2: return "stream v2";
    case kSetListpack: return "set listpack";
    case kStreamListpacks3: return "stream v3";
    case kHashMetadataPreGa: return "hash with field TTLs (7.4 release candidate format)";
    case kHashListpackExPreGa:
      return "hash listpack with field TTLs (7.4 release candidate format)";
    case kHashMetadata: return "hash with field TTLs";
    case kHashListpackEx: return "hash listpack with field TTLs";
    case kOpSlotInfo: return "opcode SLOT_INFO";
    case kOpFunction2: return "opcode FUNCTION2";
    case kOpFunctionPreGa: return "opcode FUNCTION (7.0 release candidate format)";
    case kOpModuleAux: return "opcode MODULE_AUX";
    case kOpIdle: return "opcode IDLE";
    case kOpFreq: return "opcode FREQ";
    case kOpAux: return "opcode AUX";
    case kOpResizeDb: return "opcode RESIZEDB";
    case kOpExpireTimeMs: return "opcode EXPIRETIME_MS";
    case kOpExpireTime: return "opcode EXPIRETIME";
    case kOpSelectDb: return "opcode SELECTDB";
    case kOpEof: return "opcode EOF";
    default: return nullptr;
  }
}

uint16_t first_version(uint8_t type, uint16_t version) {
  if (type_name(type, version) == nullptr) return 0;
  if (is_valkey_numbering(version) && (type == kValkeyHash2 || type == kOpValkeySlotImport))
    return kFirstValkeyVersion;
  switch (type) {
    case kString:
    case kList:
    case kSet:
    case kZset:
    case kHash:
    case kOpExpireTime:
    case kOpSelectDb:
    case kOpEof: return 1;
    case kHashZipmap:
    case kListZiplist:
    case kSetIntset:
    case kZsetZiplist: return 2;
    case kOpExpireTimeMs: return kFirstVersionWithExpireMs;
    case kHashZiplist: return 4;
    case kListQuicklist:
    case kOpAux:
    case kOpResizeDb: return kFirstVersionWithAux;
    case kZset2:
    case kModulePreGa:
    case kModule2: return 8;
    case kStreamListpacks:
    case kOpModuleAux:
    case kOpIdle:
    case kOpFreq: return 9;
    case kHashListpack:
    case kZsetListpack:
    case kListQuicklist2:
    case kStreamListpacks2:
    case kOpFunction2:
    case kOpFunctionPreGa: return kFirstVersionWithFunctions;
    case kSetListpack:
    case kStreamListpacks3: return 11;
    case kHashMetadataPreGa:
    case kHashListpackExPreGa:
    case kHashMetadata:
    case kHashListpackEx:
    case kOpSlotInfo: return 12;
    default: return 0;
  }
}

bool is_opcode_of_any_version(uint8_t type) {
  switch (type) {
    case kOpExpireTimeMs:
    case kOpAux:
    case kOpResizeDb:
    case kOpIdle:
    case kOpFreq:
    case kOpModuleAux:
    case kOpFunction2:
    case kOpSlotInfo: return true;
    default: return false;
  }
}

void append_length(std::string& out, uint64_t n) {
  if (n < (1u << 6)) {
    out.push_back(static_cast<char>(n));
  } else if (n < (1u << 14)) {
    out.push_back(static_cast<char>(0x40 | (n >> 8)));
    out.push_back(static_cast<char>(n & 0xff));
  } else if (n <= UINT32_MAX) {
    out.push_back(static_cast<char>(kLen32Bit));
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((n >> shift) & 0xff));
  } else {
    out.push_back(static_cast<char>(kLen64Bit));
    for (int shift = 56; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((n >> shift) & 0xff));
  }
}

}  // namespace rrs::rdb
