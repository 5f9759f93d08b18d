// One RDB value (the bytes after the type byte, as rdb::Event::value and a
// DUMP payload carry them) re-encoded so that a server of another RDB version
// or engine loads it: an older Redis, or Valkey from Redis and back. Pure: no
// I/O. Every input is untrusted: reads stay in bounds, memory is bounded by
// the input's size and max_output_bytes, and malformed input is a kBadData
// Status naming what is wrong and where.
//
// The rules, by what the target (RDB `to`) can hold:
//  1. Types 0-19 into RDB 10 and up, types 20 (set listpack) and 21 (stream
//     v3) into RDB 11 and up: the same bytes (needs_conversion() is false;
//     the caller only restamps the DUMP trailer's version). Checked in
//     rdb.c of Redis 7.0.15 (RDB 10), Redis 8.0.6 (RDB 12) and Valkey 9.1.2
//     (RDB 80, and RDB 11, which it writes for older replicas through the
//     same rdbSaveObject, rdbGetObjectType(o, rdbver)): rdbSaveObject's
//     writes differ only by 8.0 saving a listpack-encoded list as a
//     one-node quicklist 2 (type 18, the same bytes), by set listpacks and
//     by field TTLs; the stream writers (rdbSaveStreamPEL,
//     rdbSaveStreamConsumers, the metadata) are the same but for v3's
//     active time; rdbLoadObject reads types 0-19 the same way in all three
//     (7.0's rdbIsObjectType stops at 19); listpack.c's LP_ENCODING_* and
//     backlen are the same in 8.0.6 and 9.1.2. Valkey 8 is a fork of Redis
//     7.2 at RDB 11 (tests/integration/rdb_convert_redis_test.cc restores
//     every pair, 8.0.1 included).
//  2. Set listpack (20) into RDB 10: a plain set (2): the count, then each
//     member as an RDB string (an integer entry as its decimal digits).
//     Redis 7.0's rdbLoadObject(RDB_TYPE_SET) makes an intset or a hash
//     table of it by itself (set-max-intset-entries).
//  3. Stream v3 (21) into RDB 10: stream v2 (19), the same without each
//     consumer's active time (8 bytes after its seen time), which Redis 7.0
//     has no place for: kLossConsumerActiveTime when the stream has a
//     consumer.
//  4. Redis hashes with field TTLs (RDB 12 and below, Redis numbering):
//       24 HASH_METADATA:    <min TTL: 8 bytes LE ms> <count> then per field
//                            <TTL: RDB length, 0: none, else expire_at - min
//                            + 1> <field> <value>
//       22 (7.4 RC form):    the same without the min TTL, TTLs absolute ms
//       25 HASH_LISTPACK_EX: <min TTL: 8 bytes LE ms, 0: none> <listpack of
//                            field, value, TTL triplets; TTL an integer
//                            entry, absolute ms, 0: none>
//       23 (7.4 RC form):    the same without the min TTL
//     (Redis 8.0.6 rdb.c rdbSaveObject OBJ_HASH and rdbLoadObject; a TTL
//     above EB_EXPIRE_TIME_MAX, 2^48 - 1, is corrupt there.)
//     - into RDB 80: Valkey's HASH_2 (22): <count> then per field <field>
//       <value> <expiry: 8 bytes LE ms, -1 (EXPIRY_NONE): none> (Valkey
//       9.1.2 rdb.c rdbSaveObject, expire.h). A hash with no TTL left in it
//       becomes a listpack hash (16, from 23/25) or a plain hash (4). No loss.
//     - into RDB 10 and 11: a listpack hash (16: the listpack without the
//       TTL entries) from 23/25, a plain hash (4) from 22/24;
//       kLossFieldTtls when a field had a TTL.
//     - into RDB 12: the same bytes.
//  5. Valkey's HASH_2 (22 under RDB 80):
//     - into RDB 12: HASH_METADATA (24), min TTL and relative TTLs as above
//       (a plain hash (4) when no field has an expiry). An expiry of 0 ms
//       (1970) goes as 1 ms, both long past: Redis reads an expire_at of 0
//       as "no TTL". An expiry past Redis's 2^48 - 1 ms is refused.
//     - into RDB 10 and 11: a plain hash (4); kLossFieldTtls when a field
//       had an expiry.
//  6. Valkey's other types (0-21) into RDB 12, 11, 10: as rule 1 (and 2, 3
//     into RDB 10).
// Field TTLs that are already past stay as they are: the target expires them.
// Anything else is a kRefused Status naming the type and versions: module
// values across versions (their encoding is the module's own), targets
// below RDB 10 or of unknown versions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs::rdb {

// What a conversion could not carry into the target's format (bits).
enum Loss : uint32_t {
  kLossNone = 0,
  kLossFieldTtls = 1,           // hash field TTLs, into RDB 10/11
  kLossConsumerActiveTime = 2,  // stream consumers' active time, into RDB 10
};
inline constexpr size_t kLossKindCount = 2;  // bits 1 << 0 .. 1 << (count - 1)
// "field TTLs, consumer active times" for messages; "nothing" for kLossNone.
std::string loss_names(uint32_t lost);
// The name of Loss bit 1 << `kind` in key=value fields: "field_ttls",
// "active_times".
const char* loss_key(size_t kind);

struct Converted {
  uint8_t type = 0;
  std::string value;
  uint32_t lost = kLossNone;
};

// The largest converted value convert_value() builds by default (what a
// target takes in one RESTORE is 512 MiB by default, proto-max-bulk-len).
inline constexpr uint64_t kMaxConvertedBytes = uint64_t{1} << 32;

// Whether conversion from RDB `from` to RDB `to` is supported at all: both
// versions known (rdb::is_known_version) and `to` at least 10 (Redis 7.0).
bool can_convert(uint16_t from, uint16_t to);

// Whether a value of `type` from an RDB of `from` must change to load as RDB
// `to`. False: only the payload trailer's version changes, the bytes stay.
// True also for what convert_value() refuses (modules across versions,
// unknown types), so a caller that restamps on false never sends those.
bool needs_conversion(uint8_t type, uint16_t from, uint16_t to);

// The value re-encoded for RDB `to` (a copy when !needs_conversion()).
// Lossy conversions succeed and say what was lost in `lost`. Errors:
// kRefused (no rule: see above), kBadData (malformed value, or a converted
// value above `max_output_bytes`).
Result<Converted> convert_value(uint8_t type, std::string_view value, uint16_t from, uint16_t to,
                                uint64_t max_output_bytes = kMaxConvertedBytes);

// What converting this value to the oldest target (RDB 10, Redis 7.0) would
// lose, as Loss bits. Only values that can lose anything are examined
// (hashes with field TTLs, streams of RDB 11 and up); a malformed value
// reports nothing here (its conversion fails later, naming it).
uint32_t losses_at_oldest(uint8_t type, std::string_view value, uint16_t from);

// The Loss bits a conversion into RDB `to` can incur, of those that
// losses_at_oldest() reports: field TTLs below RDB 12, consumers' active
// times below RDB 11.
uint32_t losses_into(uint16_t to);

}  // namespace rrs::rdb
