// What every RESTORE load path shares: the commands that write a record, and
// what an error reply to one means (RestoreLoader for one target, cluster/
// for a cluster's nodes).
//
// A record is written with RESTORE, except a string of at most
// kPlainStringMax bytes: that goes as SET (with PXAT for a TTL) or, without a
// TTL and on one node, in an MSET with others. The target then applies a
// plain write instead of checking a DUMP payload's CRC-64 and decoding it,
// and MSET shares one command's cost among many keys: for 16-byte values
// the target's CPU per key drops by about a third (docs/architecture.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/redis/redis_client.h"
#include "proto/server_version.h"

namespace rrs {

// Appends RESTORE key ttl payload REPLACE ABSTTL to `out` (RESP); a negative
// expiry is none (0). REPLACE with an absolute TTL makes it idempotent:
// sending it twice leaves the same key.
void append_restore(std::string& out, std::string_view key, int64_t expire_at_ms,
                    std::string_view payload);

// Strings larger than this stay RESTOREs: their per-command cost is already
// small beside their bytes, and LZF ones travel compressed.
inline constexpr uint64_t kPlainStringMax = uint64_t{512} * 1024;

// The value of a DUMP `payload` of a string of at most kPlainStringMax bytes
// whose CRC-64 is right, viewed in place or decoded into `scratch`; nullopt
// for any other payload (another type, or malformed: then RESTORE lets the
// target judge it, and say so).
std::optional<std::string_view> plain_string(std::string_view payload, std::string& scratch);

// Whether the user `redis` is logged in as may run SET and MSET (on a key
// no pattern of the table's keys is likely to exclude). A least-privilege
// loader user granted only +restore may not: then every record goes as
// RESTORE. The probes write nothing: each is refused after the ACL check,
// by the command's own argument check.
Result<bool> may_write_plain_strings(RedisClient& redis);
// The same probes for a pipeline (a write blocks while the target is paused,
// so a loader sends them ahead of its records instead of waiting): appends
// them to `out` and returns how many replies they get. A reply that
// probe_refused() is a NOPERM: no plain strings.
size_t append_plain_string_probes(std::string& out);
bool probe_refused(std::string_view error);

// Appends SET key value [PXAT expire_at_ms] (RESP); a negative expiry is none.
// Like RESTORE ... REPLACE ABSTTL it replaces any key of that name, and is
// idempotent.
void append_set(std::string& out, std::string_view key, int64_t expire_at_ms,
                std::string_view value);

// Appends SET (with `value`, the record's plain string from plain_string())
// or, without one, RESTORE of its payload; returns the command's name.
const char* append_write(std::string& out, std::string_view key, int64_t expire_at_ms,
                         std::string_view payload, std::optional<std::string_view> value);

// Appends the command that writes one record on its own: SET for a plain
// string, RESTORE for anything else (`scratch` as for plain_string). Returns
// the command's name, for messages.
const char* append_record(std::string& out, std::string_view key, int64_t expire_at_ms,
                          std::string_view payload, std::string& scratch,
                          bool plain_strings = true);

// One MSET being built from TTL-less strings (their keys must share a DB,
// and in a cluster a slot).
class MsetBuilder {
 public:
  // Takes a copy of the pair; full() says when to flush.
  void add(std::string_view key, std::string_view value);
  bool full() const { return keys_ >= kMaxKeys || args_.size() >= kMaxBytes; }
  bool empty() const { return keys_ == 0; }
  size_t keys() const { return keys_; }
  // Appends MSET with every pair added since the last flush to `out`.
  void flush_into(std::string& out);

 private:
  static constexpr size_t kMaxKeys = 128;
  static constexpr size_t kMaxBytes = size_t{256} * 1024;
  std::string args_;  // the pairs as RESP bulk strings
  size_t keys_ = 0;
};

// An error every following command would hit too (out of memory, no rights,
// a read-only replica, a loading server): what to tell the user. nullopt: a
// failure of this record alone.
std::optional<std::string> stopping_error(std::string_view err);

// The message kept for a command writing `keys` records (1, or an MSET's
// count) that the target refused; `key` and `index` are the first record's.
std::string write_failure(std::string_view command, uint32_t keys, std::string_view key,
                          uint64_t index, uint32_t db, std::string_view err, uint16_t table_rdb,
                          const ServerVersion& target);

}  // namespace rrs
