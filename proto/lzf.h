// LZF decompression, for RDB strings stored as RDB_ENC_LZF. The input is
// untrusted: every literal run and back-reference is bounds-checked.
//
// The stream is a sequence of items, each starting with a control byte:
//   000LLLLL <L+1 literal bytes>                 literal run, 1..32 bytes
//   LLLooooo oooooooo                            back-reference, L in 1..6
//   111ooooo <extra> oooooooo                    back-reference, L = 7 + extra
// A back-reference copies L+2 bytes from `offset` = (o + 1) bytes behind the
// end of the output so far (1..8192); source and destination may overlap.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace rrs {

// One 3-byte back-reference yields at most 264 bytes (7 + 255 + 2), so an
// honest stream never expands more than 88x. Callers reject a declared
// uncompressed length above in.size() * kLzfMaxExpansion before allocating.
inline constexpr size_t kLzfMaxExpansion = 89;

// Decompresses `in`, which must produce exactly `expected_len` bytes. Errors
// (ErrorKind::kBadData) name the problem and the input offset of the item at
// fault. Also refuses an expected_len above in.size() * kLzfMaxExpansion
// before allocating anything.
Result<std::string> lzf_decompress(std::string_view in, size_t expected_len);

// Whether lzf_decompress(in, expected_len) would succeed, and the same error
// if not, without writing the output: nothing is allocated, so a string
// that is only copied as it stands can be checked at no memory cost.
Status lzf_check(std::string_view in, size_t expected_len);

}  // namespace rrs
