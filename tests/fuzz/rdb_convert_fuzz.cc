// libFuzzer target: rdb::convert_value (proto/rdb_convert.h), which re-encodes
// values straight from the master's RDB for another server version.
//
// Input: a type byte, the RDB version converted from (a byte: 10, 11, 12, 80
// are the known ones that matter), the RDB version converted to (a byte),
// then the value. The value is copied into a heap buffer of exactly its
// size, so ASan sees any read past it; the output is capped at 4 MiB
// (max_output_bytes), which also caps every decompressed string. Checked:
//   - an error is kBadData or kRefused, and kRefused only where there is no
//     rule (can_convert false, a module value) or for a Valkey field expiry
//     Redis cannot hold;
//   - the same answer twice;
//   - a value that needs no conversion comes back as it was;
//   - a converted value's losses are what its target cannot hold (field
//     TTLs below RDB 12, consumer active times in RDB 10), and the value is
//     within the cap;
//   - a converted value of a supported pair parses with rdb::RdbParser under
//     the target's version, as the record of a minimal RDB, to exactly its
//     bytes; a listpack hash it made is a valid listpack; and the target's
//     version needs no further conversion of it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proto/listpack.h"
#include "proto/rdb_convert.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace rrs::rdb;

constexpr uint64_t kCap = 4ull << 20;

rrs::Result<Converted> convert_in_heap(uint8_t type, std::string_view value, uint16_t from,
                                       uint16_t to) {
  auto copy = std::make_unique_for_overwrite<char[]>(value.size());
  if (!value.empty()) std::memcpy(copy.get(), value.data(), value.size());
  return convert_value(type, std::string_view(copy.get(), value.size()), from, to, kCap);
}

// The converted value as the record of key "k" in an RDB of `version`.
void check_parses(uint8_t type, const std::string& value, uint16_t version) {
  char header[kHeaderSize + 1];
  std::snprintf(header, sizeof header, is_valkey_numbering(version) ? "VALKEY%03u" : "REDIS%04u",
                static_cast<unsigned>(version));
  std::string rdb = header;
  rdb += static_cast<char>(type);
  rdb += "\x01k";
  rdb += value;
  rdb += static_cast<char>(kOpEof);
  rdb += std::string(8, '\0');  // no checksum
  RdbParser p;
  p.feed(rdb);
  auto ev = p.next();
  FUZZ_CHECK(ev.ok(), "a converted value the parser refuses: " + ev.status().message());
  FUZZ_CHECK(*ev && (*ev)->kind == EventKind::kRecord, "no record");
  FUZZ_CHECK((*ev)->type == type && (*ev)->value == value,
             "the parser's record is not the converted value");
  auto end = p.next();
  FUZZ_CHECK(end.ok() && *end && (*end)->kind == EventKind::kEnd,
             "the parser did not end after the value");
}

// The bytes of `v` when it is exactly one plain (not encoded) RDB string.
std::optional<std::string_view> plain_string(std::string_view v) {
  if (v.empty()) return std::nullopt;
  const auto b = static_cast<uint8_t>(v[0]);
  size_t head = 1;
  uint64_t n = b & 0x3fu;
  if (b >> 6 == kLen14Bit) {
    if (v.size() < 2) return std::nullopt;
    head = 2, n = (n << 8) | static_cast<uint8_t>(v[1]);
  } else if (b == kLen32Bit || b == kLen64Bit) {
    head = b == kLen32Bit ? 5 : 9;
    if (v.size() < head) return std::nullopt;
    n = 0;
    for (size_t i = 1; i < head; ++i) n = (n << 8) | static_cast<uint8_t>(v[i]);
  } else if (b >> 6 != kLen6Bit) {
    return std::nullopt;
  }
  if (v.size() - head != n) return std::nullopt;
  return v.substr(head);
}

bool same(const rrs::Result<Converted>& a, const rrs::Result<Converted>& b) {
  if (a.ok() != b.ok()) return false;
  if (!a.ok()) return a.status().message() == b.status().message();
  return a->type == b->type && a->value == b->value && a->lost == b->lost;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t type = data[0];
  const uint16_t from = data[1], to = data[2];
  const std::string_view value(reinterpret_cast<const char*>(data + 3), size - 3);

  auto c = convert_in_heap(type, value, from, to);
  FUZZ_CHECK(same(c, convert_in_heap(type, value, from, to)), "two answers for one value");
  if (!c.ok()) {
    const rrs::Status& st = c.status();
    FUZZ_CHECK(st.kind() == rrs::ErrorKind::kBadData || st.kind() == rrs::ErrorKind::kRefused,
               "neither kBadData nor kRefused: " + st.message());
    if (st.kind() == rrs::ErrorKind::kRefused)
      FUZZ_CHECK(!can_convert(from, to) || type == kModule2 || type == kModulePreGa ||
                     (type == kValkeyHash2 && is_valkey_numbering(from)),
                 "refused with a rule for it: " + st.message());
    return 0;
  }
  FUZZ_CHECK(can_convert(from, to), "converted between versions it cannot convert");
  FUZZ_CHECK(c->value.size() <= kCap, "a value above max_output_bytes");
  if (!needs_conversion(type, from, to)) {
    FUZZ_CHECK(c->type == type && c->value == value && c->lost == kLossNone,
               "a value that needs no conversion changed");
    return 0;
  }
  FUZZ_CHECK((c->lost & ~uint32_t{kLossFieldTtls | kLossConsumerActiveTime}) == 0,
             "unknown loss bits " + std::to_string(c->lost));
  FUZZ_CHECK(!(c->lost & kLossFieldTtls) || to < 12,
             "field TTLs lost into RDB " + std::to_string(to));
  FUZZ_CHECK(!(c->lost & kLossConsumerActiveTime) || to == 10,
             "consumer active times lost into RDB " + std::to_string(to));
  FUZZ_CHECK(!needs_conversion(c->type, to, to), "the result needs converting again");
  check_parses(c->type, c->value, to);
  if (c->type == kHashListpack) {
    // Made from the entries of another: one plain RDB string holding a
    // listpack of pairs.
    auto lp = plain_string(c->value);
    FUZZ_CHECK(lp.has_value(), "a converted listpack hash is not one plain RDB string");
    auto count = rrs::listpack::validate(*lp);
    FUZZ_CHECK(count.ok(),
               "a converted listpack hash is not a listpack: " + count.status().message());
    FUZZ_CHECK(*count % 2 == 0, "a converted listpack hash of an odd number of entries");
  }
  return 0;
}
