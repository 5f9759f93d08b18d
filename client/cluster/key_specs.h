// COMMAND INFO's key specs (Redis 7+), evaluated here where they can be, so
// a command with movable keys (EVAL, FCALL, ZUNIONSTORE: a key count among
// its arguments) needs no COMMAND GETKEYS round trip per call. Only the
// forms whose meaning is fixed are taken: begin_search by index, find_keys
// by range or by key count, none flagged INCOMPLETE. Anything else (a
// keyword search, a form this code does not know, a field out of place)
// leaves the command to COMMAND GETKEYS: the target still decides.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace rrs {

struct KeySpec {
  int begin = 0;  // begin_search index: the argument the search starts at
  bool keynum = false;
  // find_keys range: the last key relative to `begin` (negative: from the
  // end of the command, `limit` dividing what remains), every `keystep`.
  int lastkey = 0, keystep = 1, limit = 0;
  // find_keys keynum: the key count at begin + keynumidx, the first key at
  // begin + firstkey.
  int keynumidx = 0, firstkey = 0;
};

// The specs of a COMMAND INFO entry's key specs field (RESP2 maps: flat
// arrays of name, value); nullopt unless there are some and every one can be
// evaluated here.
std::optional<std::vector<KeySpec>> parse_key_specs(const redisReply& specs);

// The argument indexes of the keys of `args` by `specs`; nullopt when the
// arguments do not fit them (the target's GETKEYS says what it makes of it).
std::optional<std::vector<size_t>> keys_by_specs(const std::vector<KeySpec>& specs,
                                                 std::span<const std::string_view> args);

}  // namespace rrs
