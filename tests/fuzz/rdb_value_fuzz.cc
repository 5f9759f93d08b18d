// libFuzzer target: rdb::is_empty_collection and rdb::string_value
// (proto/rdb_value.h), which read values straight from the master's RDB.
//
// Input: a type byte, a version byte (even: RDB 12, Redis's numbering; odd:
// RDB 80, Valkey's), then the value. The value is copied into a heap buffer
// of exactly its size, so ASan sees any read past it. Checked:
//   - the same answer twice;
//   - the types that are never empty (strings, streams, modules, zipmaps,
//     intsets, Valkey's 23-25, unknown types) answer false;
//   - an empty value is never cut short and has nothing after it: every
//     prefix (the first and last 64) and the value plus one byte answer false;
//   - under RDB 12 an empty value is one rdb::RdbParser takes as a record of
//     exactly these bytes (what it calls empty, the sidecar can have parsed);
//   - string_value (any type byte: the value is read as a string) stays in
//     bounds, keeps to its limit, and gives the same content twice.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "proto/rdb_value.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rrs::rdb::is_empty_collection;

bool empty_in_heap(uint8_t type, std::string_view value, uint16_t version) {
  auto copy = std::make_unique_for_overwrite<char[]>(value.size());
  if (!value.empty()) std::memcpy(copy.get(), value.data(), value.size());
  return is_empty_collection(type, std::string_view(copy.get(), value.size()), version);
}

bool can_be_empty(uint8_t type, uint16_t version) {
  using namespace rrs::rdb;
  switch (type) {
    case kList:
    case kSet:
    case kZset:
    case kHash:
    case kZset2:
    case kListZiplist:
    case kZsetZiplist:
    case kHashZiplist:
    case kListQuicklist:
    case kHashListpack:
    case kZsetListpack:
    case kListQuicklist2:
    case kSetListpack:
    case kHashMetadataPreGa: return true;
    case kHashListpackExPreGa:
    case kHashMetadata:
    case kHashListpackEx: return version <= kMaxRedisVersion;
    default: return false;
  }
}

// The value as the record of key "k" in an RDB 12, parsed back.
void check_parser_takes(uint8_t type, std::string_view value) {
  std::string rdb = "REDIS0012";
  rdb += static_cast<char>(type);
  rdb += "\x01k";
  rdb += value;
  rdb += static_cast<char>(rrs::rdb::kOpEof);
  rdb += std::string(8, '\0');  // no checksum
  rrs::rdb::RdbParser p;
  p.feed(rdb);
  auto ev = p.next();
  FUZZ_CHECK(ev.ok(), "an empty value the parser refuses: " + ev.status().message());
  FUZZ_CHECK(*ev && (*ev)->kind == rrs::rdb::EventKind::kRecord, "no record");
  FUZZ_CHECK((*ev)->value == value, "the parser's record has other bytes than the value");
  auto end = p.next();
  FUZZ_CHECK(end.ok() && *end && (*end)->kind == rrs::rdb::EventKind::kEnd,
             "the parser did not end after the value");
}

void check_string_value(std::string_view value) {
  auto copy = std::make_unique_for_overwrite<char[]>(value.size());
  if (!value.empty()) std::memcpy(copy.get(), value.data(), value.size());
  const std::string_view in_heap(copy.get(), value.size());
  constexpr uint64_t kLimit = 4096;
  std::string scratch, scratch2;
  auto first = rrs::rdb::string_value(in_heap, scratch, kLimit);
  if (!first) return;
  FUZZ_CHECK(first->size() <= kLimit, "a string past the limit");
  const std::string content(*first);
  auto again = rrs::rdb::string_value(in_heap, scratch2, kLimit);
  FUZZ_CHECK(again && *again == content, "two contents for one string");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t type = data[0];
  const uint16_t version = (data[1] & 1) ? 80 : rrs::rdb::kMaxRedisVersion;
  std::string_view value(reinterpret_cast<const char*>(data + 2), size - 2);
  check_string_value(value);

  const bool empty = empty_in_heap(type, value, version);
  FUZZ_CHECK(empty == empty_in_heap(type, value, version), "two answers for one value");
  if (!empty) return 0;
  FUZZ_CHECK(can_be_empty(type, version), "type " + std::to_string(type) + " under RDB " +
                                              std::to_string(version) + " called empty");
  for (size_t n = 0; n < value.size(); ++n) {
    if (n == 64 && value.size() > 128) n = value.size() - 64;
    FUZZ_CHECK(!empty_in_heap(type, value.substr(0, n), version),
               "also empty cut to " + std::to_string(n) + " of " + std::to_string(value.size()) +
                   " bytes");
  }
  FUZZ_CHECK(!empty_in_heap(type, std::string(value) + '\0', version),
             "still empty with a byte after it");
  if (version <= rrs::rdb::kMaxRedisVersion) check_parser_takes(type, value);
  return 0;
}
