// What a verify run prints: a line per difference (the first N), then one
// summary line. Pure: strings in, strings out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "client/verify/key_compare.h"

namespace rrs::verify {

// Bytes as one token of a line: printable ASCII as it is; space, '\',
// control and non-ASCII bytes as \xNN. Past `limit` bytes, cut with "...".
std::string escape(std::string_view bytes, size_t limit = SIZE_MAX);

// different key=<escaped> db=N what=<what> source=<escaped> target=<escaped>
// (values cut at 64 bytes).
std::string difference_line(std::string_view key, uint32_t db, const Difference& d);

struct VerifyCounts {
  uint64_t keys = 0;       // keys on the source (INFO keyspace), or sampled
  uint64_t compared = 0;   // source keys read on both sides
  uint64_t different = 0;  // on both sides, not the same (type, value, TTL, field TTL)
  uint64_t missing = 0;    // on the source only
  uint64_t extra = 0;      // on the target only (full runs)
  uint64_t libraries = 0;  // function libraries on either side, when compared
  uint64_t libraries_different = 0;
  bool libraries_compared = false;
  bool equal() const {
    return different == 0 && missing == 0 && extra == 0 && libraries_different == 0;
  }
};

// different library=<escaped> what=<what> source=<escaped> target=<escaped>
std::string library_line(std::string_view name, const Difference& d);

// verify: equal|different keys=N compared=N different=N missing=N extra=N
// libraries=N|- libraries_different=N seconds=S (libraries "-": not compared)
std::string summary_line(const VerifyCounts& c, double seconds);

}  // namespace rrs::verify
