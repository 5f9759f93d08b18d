// One key's logical content, read with its type's own commands and put in a
// form that compares across server versions and engines (where DUMP payloads
// and DEBUG DIGEST differ): a flat map of path -> bytes, so the first path
// that differs names what differs. Pure: built from replies, no I/O.
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace rrs::verify {

// PTTL's answers for "no expiry" and "no such key".
inline constexpr int64_t kNoExpiry = -1;
inline constexpr int64_t kNoKey = -2;

struct KeyState {
  std::string type = "none";  // TYPE's answer; "none": the key is not there
  int64_t pttl = kNoKey;      // PTTL: ms left, kNoExpiry, or kNoKey
  // The value by path (see value_command()): "" for a string, "[i]" for a
  // list element, the member for a set ("") or zset (its score), the field
  // for a hash, a flattened XINFO STREAM FULL for a stream.
  std::map<std::string, std::string> value;
  // Hash fields with a TTL: field -> absolute expiry in ms (HPEXPIRETIME).
  // Empty on a server without hash field TTLs: those have none.
  std::map<std::string, int64_t> field_expiry;

  bool exists() const { return type != "none"; }
};

// The one command that reads a key of `type` whole.
std::vector<std::string> value_command(std::string_view type, std::string_view key);

// Fills state.value from value_command()'s reply. A reply of the wrong shape
// (a peer that lies, a key changed between TYPE and the read) is kBadData.
Status take_value(const redisReply& reply, KeyState& state);

// HPEXPIRETIME key FIELDS n f1 ... for a hash's fields (state.value's keys);
// empty when it has none.
std::vector<std::string> field_expiry_command(std::string_view key, const KeyState& state);
// Fills state.field_expiry from that command's reply (-1: no TTL, skipped).
Status take_field_expiry(const redisReply& reply, KeyState& state);

// A zset score as one text for every server: 7.0 writes 0.1 as
// "0.10000000000000001", 7.2 and later as "0.1"; both are the same double.
std::string canonical_score(std::string_view text);

// XINFO STREAM FULL's reply flattened to path -> value ("groups.0.name",
// "entries.2.<id>.<field>"), without the consumers' active-time, which
// servers before 7.2 do not keep.
void flatten_reply(const redisReply& reply, const std::string& path,
                   std::map<std::string, std::string>& out);

}  // namespace rrs::verify
