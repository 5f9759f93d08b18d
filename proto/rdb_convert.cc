#include "proto/rdb_convert.h"

#include <algorithm>
#include <iterator>

#include "proto/listpack.h"
#include "proto/lzf.h"
#include "proto/rdb_format.h"
#include "proto/rdb_value_reader.h"

namespace rrs::rdb {
namespace {

// The first RDB versions with a type: set listpack and stream v3 came with
// RDB 11 (Redis 7.2), field TTLs with RDB 12 (Redis 7.4).
constexpr uint16_t kFirstVersionWithSetListpack = 11;
constexpr uint16_t kFirstVersionWithFieldTtls = 12;
constexpr uint16_t kMinTarget = 10;  // Redis 7.0

// Redis's ebuckets.h: EB_EXPIRE_TIME_MAX is the largest field TTL it holds,
// EB_EXPIRE_TIME_INVALID (one more) the "no TTL" of a hash's minimum.
constexpr uint64_t kMaxFieldTtl = (uint64_t{1} << 48) - 1;
constexpr uint64_t kNoMinTtl = kMaxFieldTtl + 1;
// Valkey's expire.h EXPIRY_NONE: a field of HASH_2 with no expiry.
constexpr int64_t kValkeyNoExpiry = -1;
constexpr size_t kStreamIdBytes = 16;

std::string version_text(uint16_t v) { return "RDB " + std::to_string(v); }

std::string type_text(uint8_t type, uint16_t version) {
  const char* name = type_name(type, version);
  return std::string(name ? name : "unknown type") + " (type " + std::to_string(type) + ")";
}

// The converted value, growing up to a cap. Appends past the cap are
// dropped and remembered: walkers check over() once per element.
class Out {
 public:
  explicit Out(uint64_t cap) : cap_(cap) {}

  void put(std::string_view s) {
    if (s.size() > cap_ - s_.size() || over_) {
      over_ = true;
      return;
    }
    s_.append(s);
  }
  void put_length(uint64_t n) {
    char buf[9];
    size_t len = 0;
    if (n < (1u << 6)) {
      buf[len++] = static_cast<char>(n);
    } else if (n < (1u << 14)) {
      buf[len++] = static_cast<char>(0x40 | (n >> 8));
      buf[len++] = static_cast<char>(n & 0xff);
    } else {
      const int bytes = n <= UINT32_MAX ? 4 : 8;
      buf[len++] = static_cast<char>(bytes == 4 ? kLen32Bit : kLen64Bit);
      for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8)
        buf[len++] = static_cast<char>((n >> shift) & 0xff);
    }
    put(std::string_view(buf, len));
  }
  void put_le(uint64_t v, size_t bytes) {
    char buf[8];
    for (size_t i = 0; i < bytes; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    put(std::string_view(buf, bytes));
  }
  // An RDB string of `s`: its length, then its bytes.
  void put_string(std::string_view s) {
    put_length(s.size());
    put(s);
  }

  // Room for `n` bytes (no more than the cap), to grow once.
  void reserve(uint64_t n) { s_.reserve(static_cast<size_t>(std::min(n, cap_))); }

  bool over() const { return over_; }
  uint64_t cap() const { return cap_; }
  std::string take() && { return std::move(s_); }

 private:
  std::string s_;
  uint64_t cap_;
  bool over_ = false;
};

// A listpack entry's content: the string, or the integer's digits in `buf`.
std::string_view entry_text(const listpack::Entry& e, char (&buf)[listpack::kMaxIntDigits + 1]) {
  if (!e.is_int) return e.str;
  return {buf, listpack::format_int(e.num, buf)};
}

// What each conversion returns; the caller adds the type and versions to
// an error.
struct Step {
  uint8_t type = 0;
  uint32_t lost = kLossNone;
  bool refused = false;
  std::string refusal;
};

bool finish(ValueReader& in, Out& out, const char* what) {
  if (!in.at_end(what)) return false;
  if (out.over())
    return in.fail("the converted value would pass " + std::to_string(out.cap()) +
                   " bytes (max_output_bytes)");
  return true;
}

// A listpack held in an RDB string (plain or LZF), checked whole.
bool read_listpack(ValueReader& in, std::string_view& lp, uint64_t& count, std::string& scratch,
                   const char* what) {
  if (!in.string(nullptr, &lp, scratch, what)) return false;
  auto n = listpack::validate(lp);
  if (!n.ok()) return in.fail(what + std::string(": ") + n.status().message());
  count = *n;
  return true;
}

// Rule 2: set listpack (20) -> set (2).
bool set_listpack_to_set(ValueReader& in, Out& out, Step& step) {
  std::string scratch;
  std::string_view lp;
  uint64_t count = 0;
  if (!read_listpack(in, lp, count, scratch, "set listpack") || !in.at_end("set listpack"))
    return false;
  step.type = kSet;
  out.put_length(count);
  listpack::Reader r(lp);
  listpack::Entry e;
  char digits[listpack::kMaxIntDigits + 1];
  while (r.next(e) && !out.over()) out.put_string(entry_text(e, digits));
  return finish(in, out, "set listpack");
}

// Rule 3: stream v3 (21) -> v2 (19): copied, less each consumer's active
// time. Every count is walked element by element (each takes input bytes),
// so a lying count ends at the input's end.
bool stream_v3_to_v2(ValueReader& in, Out& out, Step& step) {
  step.type = kStreamListpacks2;
  const std::string_view v = in.value();
  size_t copied = 0;  // v[0, copied) is in `out` or dropped
  std::string scratch;
  std::string_view content;
  uint64_t nodes = 0, n = 0, groups = 0;
  in.length(nodes, "stream listpack count");
  for (uint64_t i = 0; i < nodes && in.ok(); ++i) {
    if (in.string(nullptr, &content, scratch, "stream node key") &&
        content.size() != kStreamIdBytes)
      return in.fail("a stream node key of " + std::to_string(content.size()) +
                     " bytes, not a 16-byte ID");
    in.string(nullptr, nullptr, scratch, "stream listpack");
  }
  // Length, last ID, first ID, max deleted ID (two lengths each), entries added.
  for (int i = 0; i < 8; ++i) in.length(n, "stream metadata");
  in.length(groups, "consumer group count");
  for (uint64_t g = 0; g < groups && in.ok(); ++g) {
    uint64_t pel = 0, consumers = 0;
    in.string(nullptr, nullptr, scratch, "consumer group name");
    for (int i = 0; i < 3; ++i) in.length(n, "consumer group last ID or entries read");
    in.length(pel, "group PEL size");
    for (uint64_t p = 0; p < pel && in.ok(); ++p) {
      in.skip(kStreamIdBytes + 8, "group PEL entry");  // ID, delivery time
      in.length(n, "group PEL delivery count");
    }
    in.length(consumers, "consumer count");
    for (uint64_t c = 0; c < consumers && in.ok(); ++c) {
      in.string(nullptr, nullptr, scratch, "consumer name");
      in.skip(8, "consumer seen time");
      const size_t active = in.pos();
      if (!in.skip(8, "consumer active time")) break;
      out.put(v.substr(copied, active - copied));
      copied = active + 8;
      step.lost |= kLossConsumerActiveTime;
      in.length(pel, "consumer PEL size");
      for (uint64_t p = 0; p < pel && in.ok(); ++p) in.skip(kStreamIdBytes, "consumer PEL entry");
    }
  }
  if (!in.at_end("stream")) return false;
  out.put(v.substr(copied));
  return finish(in, out, "stream");
}

// Rule 4, listpack forms (23, 25): triplets of field, value, TTL.
bool redis_listpack_ex(uint8_t type, ValueReader& in, Out& out, uint16_t to, Step& step) {
  const char* what = "hash listpack with field TTLs";
  uint64_t min_ttl = 0;
  if (type == kHashListpackEx) in.fixed_le(8, min_ttl, "minimum field TTL");  // unused by Redis
  std::string scratch;
  std::string_view lp;
  uint64_t count = 0;
  if (!read_listpack(in, lp, count, scratch, what) || !in.at_end(what)) return false;
  if (count % 3 != 0)
    return in.fail(what + std::string(": ") + std::to_string(count) +
                   " entries, not field, value, TTL triplets");
  // Check every TTL, and size the pairs-only listpack.
  bool any_ttl = false;
  uint64_t pairs_bytes = 0;
  listpack::Reader r(lp);
  listpack::Entry f, val, ttl;
  while (r.next(f) && r.next(val) && r.next(ttl)) {
    if (!ttl.is_int || ttl.num < 0 || static_cast<uint64_t>(ttl.num) > kMaxFieldTtl)
      return in.fail(what + std::string(": a field TTL that is not an integer from 0 to ") +
                     std::to_string(kMaxFieldTtl));
    any_ttl = any_ttl || ttl.num != 0;
    pairs_bytes += f.raw.size() + val.raw.size();
  }
  const uint64_t fields = count / 3;
  char digits[listpack::kMaxIntDigits + 1];
  if (is_valkey_numbering(to) && any_ttl) {
    step.type = kValkeyHash2;
    out.put_length(fields);
    listpack::Reader w(lp);
    while (w.next(f) && w.next(val) && w.next(ttl) && !out.over()) {
      out.put_string(entry_text(f, digits));
      out.put_string(entry_text(val, digits));
      out.put_le(ttl.num == 0 ? static_cast<uint64_t>(kValkeyNoExpiry)
                              : static_cast<uint64_t>(ttl.num),
                 8);
    }
    return finish(in, out, what);
  }
  // A listpack hash: the same field and value entries, copied as they are.
  step.type = kHashListpack;
  if (any_ttl) step.lost |= kLossFieldTtls;
  const uint64_t total = listpack::kHeaderSize + pairs_bytes + 1;
  const uint64_t entries = 2 * fields;
  out.put_length(total);
  out.put_le(total, 4);
  out.put_le(entries < listpack::kUnknownCount ? entries : listpack::kUnknownCount, 2);
  listpack::Reader w(lp);
  while (w.next(f) && w.next(val) && w.next(ttl) && !out.over()) {
    out.put(f.raw);
    out.put(val.raw);
  }
  out.put(std::string_view("\xff", 1));
  return finish(in, out, what);
}

// Rule 4, hash table forms (22, 24 under Redis's numbering): walks every
// field, checked: on_count(fields) once the count is read, then per field
// emit(field, value, expire_at: ms, 0: none) with the field's and value's
// RDB strings as they stand.
template <typename OnCount, typename Emit>
bool walk_redis_metadata(uint8_t type, ValueReader& in, OnCount&& on_count, Emit&& emit) {
  uint64_t min_ttl = 0, fields = 0;
  if (type == kHashMetadata) {
    in.fixed_le(8, min_ttl, "minimum field TTL");
    if (in.ok() && min_ttl > kNoMinTtl)
      return in.fail("a minimum field TTL of " + std::to_string(min_ttl) + " ms, past 2^48");
  }
  if (!in.length(fields, "field count")) return false;
  on_count(fields);
  std::string scratch;
  std::string_view field, value;
  for (uint64_t i = 0; i < fields && in.ok(); ++i) {
    uint64_t ttl = 0;
    if (!in.length(ttl, "field TTL")) break;
    // 24: relative to the minimum, plus 1; 22 (7.4 RC): absolute. 0: none.
    uint64_t expire_at = ttl;
    if (type == kHashMetadata && ttl != 0)
      expire_at = ttl > kMaxFieldTtl + 1 ? kMaxFieldTtl + 1 : ttl + min_ttl - 1;
    if (expire_at > kMaxFieldTtl)
      return in.fail("field TTL " + std::to_string(ttl) + " gives an expiry past 2^48 - 1 ms");
    in.string(&field, nullptr, scratch, "field");
    in.string(&value, nullptr, scratch, "value");
    if (in.ok()) emit(field, value, expire_at);
  }
  return in.at_end("hash with field TTLs");
}

bool redis_metadata(uint8_t type, ValueReader& in, Out& out, uint16_t to, Step& step) {
  auto put_count = [&](uint64_t fields) { out.put_length(fields); };
  if (!is_valkey_numbering(to)) {
    // A plain hash, in one pass: the same count, fields and values.
    step.type = kHash;
    const bool ok = walk_redis_metadata(type, in, put_count,
                                        [&](auto field, auto value, uint64_t exp) {
                                          if (exp != 0) step.lost |= kLossFieldTtls;
                                          out.put(field);
                                          out.put(value);
                                        });
    return ok && finish(in, out, "hash with field TTLs");
  }
  // HASH_2 when a field has a TTL, else a plain hash: decided by a first
  // walk that checks everything, so the second cannot fail.
  bool any_ttl = false;
  ValueReader check = in;
  if (!walk_redis_metadata(
          type, check, [](uint64_t) {},
          [&](auto, auto, uint64_t exp) { any_ttl = any_ttl || exp != 0; })) {
    in = check;
    return false;
  }
  step.type = any_ttl ? kValkeyHash2 : uint8_t{kHash};
  const bool ok = walk_redis_metadata(
      type, in, put_count, [&](auto field, auto value, uint64_t exp) {
        out.put(field);
        out.put(value);
        if (any_ttl) out.put_le(exp == 0 ? static_cast<uint64_t>(kValkeyNoExpiry) : exp, 8);
      });
  return ok && finish(in, out, "hash with field TTLs");
}

// Rule 5: Valkey's HASH_2 (22 under RDB 80): on_count(fields), then per
// field emit(field, value, expiry: ms, -1: none) with the field's and
// value's RDB strings as they stand.
template <typename OnCount, typename Emit>
bool walk_valkey_hash2(ValueReader& in, OnCount&& on_count, Emit&& emit) {
  uint64_t fields = 0;
  if (!in.length(fields, "field count")) return false;
  on_count(fields);
  std::string scratch;
  std::string_view field, value;
  for (uint64_t i = 0; i < fields && in.ok(); ++i) {
    uint64_t raw = 0;
    in.string(&field, nullptr, scratch, "field");
    in.string(&value, nullptr, scratch, "value");
    if (!in.fixed_le(8, raw, "field expiry")) break;
    const auto expiry = static_cast<int64_t>(raw);
    if (expiry < kValkeyNoExpiry)  // as Valkey's rdbLoadObject refuses it
      return in.fail("a field expiry of " + std::to_string(expiry) + " ms");
    emit(field, value, expiry);
  }
  return in.at_end("hash with field expiry");
}

bool valkey_hash2(ValueReader& in, Out& out, uint16_t to, Step& step) {
  const char* what = "hash with field expiry";
  auto put_count = [&](uint64_t fields) { out.put_length(fields); };
  if (to < kFirstVersionWithFieldTtls) {
    step.type = kHash;
    const bool ok = walk_valkey_hash2(in, put_count, [&](auto field, auto value, int64_t expiry) {
      if (expiry != kValkeyNoExpiry) step.lost |= kLossFieldTtls;
      out.put(field);
      out.put(value);
    });
    return ok && finish(in, out, what);
  }
  // Redis's HASH_METADATA: the minimum first, so a first walk finds it.
  // Redis reads an expire_at of 0 as "no TTL": 0 ms goes as 1 ms.
  auto redis_ms = [](int64_t expiry) {
    return expiry == 0 ? uint64_t{1} : static_cast<uint64_t>(expiry);
  };
  uint64_t min_ttl = kNoMinTtl, max_ttl = 0;
  ValueReader check = in;
  if (!walk_valkey_hash2(
          check, [](uint64_t) {},
          [&](auto, auto, int64_t expiry) {
            if (expiry == kValkeyNoExpiry) return;
            min_ttl = std::min(min_ttl, redis_ms(expiry));
            max_ttl = std::max(max_ttl, redis_ms(expiry));
          })) {
    in = check;
    return false;
  }
  if (max_ttl > kMaxFieldTtl) {
    step.refused = true;
    step.refusal = "a field expires at " + std::to_string(max_ttl) +
                   " ms, past the 2^48 - 1 ms Redis holds a field TTL to";
    return false;
  }
  const bool any_ttl = min_ttl != kNoMinTtl;
  step.type = any_ttl ? uint8_t{kHashMetadata} : uint8_t{kHash};
  if (any_ttl) out.put_le(min_ttl, 8);
  const bool ok = walk_valkey_hash2(in, put_count, [&](auto field, auto value, int64_t expiry) {
    if (any_ttl) out.put_length(expiry == kValkeyNoExpiry ? 0 : redis_ms(expiry) - min_ttl + 1);
    out.put(field);
    out.put(value);
  });
  return ok && finish(in, out, what);
}

bool is_module(uint8_t type) { return type == kModulePreGa || type == kModule2; }

// Whether `type` is a value type in RDB `version`'s numbering.
bool is_value_type(uint8_t type, uint16_t version) {
  return type < kOpValkeySlotImport && type_name(type, version) != nullptr;
}

}  // namespace

std::string loss_names(uint32_t lost) {
  std::string s;
  auto add = [&](uint32_t bit, const char* name) {
    if (!(lost & bit)) return;
    if (!s.empty()) s += ", ";
    s += name;
  };
  add(kLossFieldTtls, "hash field TTLs");
  add(kLossConsumerActiveTime, "stream consumers' active times");
  return s.empty() ? "nothing" : s;
}

const char* loss_key(size_t kind) {
  static constexpr const char* kKeys[] = {"field_ttls", "active_times"};
  static_assert(std::size(kKeys) == kLossKindCount);
  return kind < kLossKindCount ? kKeys[kind] : "unknown";
}

bool can_convert(uint16_t from, uint16_t to) {
  return is_known_version(from) && is_known_version(to) && to >= kMinTarget;
}

bool needs_conversion(uint8_t type, uint16_t from, uint16_t to) {
  if (from == to) return false;
  if (!is_value_type(type, from) || is_module(type)) return true;  // convert_value refuses
  if (type == kSetListpack || type == kStreamListpacks3) return to < kFirstVersionWithSetListpack;
  if (type < kHashMetadataPreGa) return false;  // 0-19: the same bytes in RDB 10 and up
  if (is_valkey_numbering(from)) return !is_valkey_numbering(to);  // HASH_2
  // Redis's 22-25: loaded as they are by Redis 7.4 and up only.
  return is_valkey_numbering(to) || to < kFirstVersionWithFieldTtls;
}

Result<Converted> convert_value(uint8_t type, std::string_view value, uint16_t from, uint16_t to,
                                uint64_t max_output_bytes) {
  const std::string step_name = "convert " + type_text(type, from) + " from " + version_text(from) +
                                " to " + version_text(to);
  auto refuse = [&](const std::string& why) {
    return Status::error(step_name, why).as(ErrorKind::kRefused);
  };
  if (!can_convert(from, to)) {
    if (!is_known_version(from) || !is_known_version(to))
      return refuse("not an RDB version this sidecar knows (Redis's " +
                    std::to_string(kMinVersion) + " to " + std::to_string(kMaxRedisVersion) +
                    ", Valkey's " + std::to_string(kMaxValkeyVersion) + ")");
    return refuse("values convert only into RDB " + std::to_string(kMinTarget) +
                  " (Redis 7.0) and newer");
  }
  if (!is_value_type(type, from))
    return Status::error(step_name, "type " + std::to_string(type) + " is not a value type of " +
                                        version_text(from))
        .as(ErrorKind::kBadData);
  if (!needs_conversion(type, from, to)) return Converted{type, std::string(value), kLossNone};
  if (is_module(type))
    return refuse("a module value is encoded by its module, which may not read it in another "
                  "RDB version or engine; it is carried only between servers of the same RDB "
                  "version");

  // Decoded strings are bounded like the output: nothing larger goes into it.
  ValueReader in(value, max_output_bytes);
  Out out(max_output_bytes);
  // Most conversions give about as many bytes as they take (a set's
  // integers grow into digits).
  out.reserve(value.size() + value.size() / 4 + 16);
  Step step;
  bool ok = false;
  if (type == kSetListpack) {
    ok = set_listpack_to_set(in, out, step);
  } else if (type == kStreamListpacks3) {
    ok = stream_v3_to_v2(in, out, step);
  } else if (is_valkey_numbering(from)) {  // kValkeyHash2
    ok = valkey_hash2(in, out, to, step);
  } else if (type == kHashListpackEx || type == kHashListpackExPreGa) {
    ok = redis_listpack_ex(type, in, out, to, step);
  } else {  // kHashMetadata, kHashMetadataPreGa
    ok = redis_metadata(type, in, out, to, step);
  }
  if (step.refused) return refuse(step.refusal);
  if (!ok) return Status::error(step_name, in.error()).as(ErrorKind::kBadData);
  return Converted{step.type, std::move(out).take(), step.lost};
}

uint32_t losses_at_oldest(uint8_t type, std::string_view value, uint16_t from) {
  const bool may_lose = type == kStreamListpacks3 || type >= kHashMetadataPreGa;
  if (!may_lose || !needs_conversion(type, from, kMinTarget)) return kLossNone;
  auto converted = convert_value(type, value, from, kMinTarget);
  return converted.ok() ? converted->lost : kLossNone;
}

uint32_t losses_into(uint16_t to) {
  uint32_t lost = kLossNone;
  if (to < kFirstVersionWithFieldTtls) lost |= kLossFieldTtls;
  if (to < kFirstVersionWithSetListpack) lost |= kLossConsumerActiveTime;
  return lost;
}

}  // namespace rrs::rdb
