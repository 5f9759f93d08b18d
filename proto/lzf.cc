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

// Refuses a declared length no honest stream of this size gives, before
// anything is allocated for it.
Status check_declared(std::string_view in, size_t expected_len) {
  constexpr size_t kMaxIn = SIZE_MAX / kLzfMaxExpansion;  // no overflow in the check below
  if (in.size() < kMaxIn && expected_len > in.size() * kLzfMaxExpansion)
    return bad(0, "declared length " + std::to_string(expected_len) + " is more than " +
                      std::to_string(kLzfMaxExpansion) + "x the " + n_bytes(in.size()) +
                      " of input");
  return Status();
}

// Walks the items of `in`, checking each as the format requires and
// handing `sink` what it would write: literal(src, n) and back(offset, n),
// in order, with the output so far exactly what they produced before.
template <typename Sink>
Status walk(std::string_view in, size_t expected_len, Sink&& sink) {
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
      sink.literal(in.data() + ip, n, op);
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
    sink.back(offset, len, op);
    op += len;
  }
  if (op != expected_len)
    return bad(in.size(),
               "input ends after " + n_bytes(op) + " of output, expected " + n_bytes(expected_len));
  return Status();
}

}  // namespace

Result<std::string> lzf_decompress(std::string_view in, size_t expected_len) {
  RRS_RETURN_IF_ERROR(check_declared(in, expected_len));
  std::string out(expected_len, '\0');
  struct Copy {
    char* out;
    void literal(const char* src, size_t n, size_t op) { std::memcpy(out + op, src, n); }
    void back(size_t offset, size_t len, size_t op) {
      char* dst = out + op;
      const char* src = dst - offset;
      if (offset >= len) {
        std::memcpy(dst, src, len);
      } else {  // overlapping: each byte may be one this copy just wrote (runs)
        for (size_t i = 0; i < len; ++i) dst[i] = src[i];
      }
    }
  };
  RRS_RETURN_IF_ERROR(walk(in, expected_len, Copy{out.data()}));
  return out;
}

Status lzf_check(std::string_view in, size_t expected_len) {
  struct Nothing {
    void literal(const char*, size_t, size_t) {}
    void back(size_t, size_t, size_t) {}
  };
  RRS_RETURN_IF_ERROR(check_declared(in, expected_len));
  return walk(in, expected_len, Nothing{});
}

}  // namespace rrs
