#include "proto/lzf.h"

#include <cstdint>
#include <cstring>

namespace rrs {
namespace {

Status bad(size_t at, const std::string& why) {
  return Status::error("lzf decompress", "at input offset " + std::to_string(at) + ": " + why)
      .as(ErrorKind::kBadData);
}

std::string n_bytes(size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

}  // namespace

Result<std::string> lzf_decompress(std::string_view in, size_t expected_len) {
  constexpr size_t kMaxIn = SIZE_MAX / kLzfMaxExpansion;  // no overflow in the check below
  if (in.size() < kMaxIn && expected_len > in.size() * kLzfMaxExpansion)
    return bad(0, "declared length " + std::to_string(expected_len) + " is more than " +
                      std::to_string(kLzfMaxExpansion) + "x the " + n_bytes(in.size()) +
                      " of input");

  std::string out(expected_len, '\0');
  char* o = out.data();
  size_t op = 0;  // bytes of output so far
  size_t ip = 0;
  auto byte = [&] { return static_cast<unsigned char>(in[ip++]); };
  while (ip < in.size()) {
    const size_t item = ip;  // where errors point
    const unsigned ctrl = byte();
    if (ctrl < 32) {  // literal run
      const size_t n = ctrl + 1;
      if (n > in.size() - ip)
        return bad(item, "literal run of " + n_bytes(n) + " but only " + n_bytes(in.size() - ip) +
                             " of input left");
      if (n > expected_len - op)
        return bad(item, "literal run of " + n_bytes(n) + " after " + n_bytes(op) +
                             " of output overruns the expected " + n_bytes(expected_len));
      std::memcpy(o + op, in.data() + ip, n);
      ip += n;
      op += n;
      continue;
    }
    size_t len = ctrl >> 5;
    if (len == 7) {
      if (ip >= in.size()) return bad(item, "back-reference truncated before its length byte");
      len += byte();
    }
    if (ip >= in.size()) return bad(item, "back-reference truncated before its offset byte");
    const size_t offset = ((ctrl & 0x1fu) << 8) + byte() + 1;
    len += 2;
    if (offset > op)
      return bad(item, "back-reference " + n_bytes(offset) + " back, before the start of the " +
                           "output (" + n_bytes(op) + " so far)");
    if (len > expected_len - op)
      return bad(item, "back-reference of " + n_bytes(len) + " after " + n_bytes(op) +
                           " of output overruns the expected " + n_bytes(expected_len));
    char* dst = o + op;
    const char* src = dst - offset;
    if (offset >= len) {
      std::memcpy(dst, src, len);
    } else {  // overlapping: each byte may be one this copy just wrote (runs)
      for (size_t i = 0; i < len; ++i) dst[i] = src[i];
    }
    op += len;
  }
  if (op != expected_len)
    return bad(in.size(),
               "input ends after " + n_bytes(op) + " of output, expected " + n_bytes(expected_len));
  return out;
}

}  // namespace rrs
