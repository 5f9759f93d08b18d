// The RDB parser's item cursor, shared by rdb_parser.cc (opcodes, keys) and
// rdb_parser_walk.cc (values): internal to the parser, not an API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proto/lzf.h"
#include "proto/rdb_format.h"
#include "proto/rdb_parser.h"

namespace rrs::rdb::detail {

// "0x1f": a byte as error messages name it.
inline std::string hex_byte(uint8_t b) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// Reads the bytes of one item. A read past the end makes the cursor short
// (need(): how many item bytes it takes at least); a malformed field makes it
// bad. Both are sticky: later reads return zeros and move nothing, so a walk
// can check ok() once per element instead of after every read.
class Cursor {
 public:
  Cursor(const char* data, size_t size, size_t pos, const Limits& limits)
      : data_(data), size_(size), pos_(pos), limits_(limits) {}

  bool ok() const { return state_ == kOk; }
  bool is_short() const { return state_ == kShort; }
  size_t pos() const { return pos_; }
  uint64_t need() const { return need_; }
  const std::string& error() const { return error_; }

  uint8_t u8() {
    if (!want(1)) return 0;
    return static_cast<uint8_t>(data_[pos_++]);
  }
  std::string_view take(uint64_t n) {
    if (!want(n)) return {};
    std::string_view v(data_ + pos_, n);
    pos_ += n;
    return v;
  }
  void skip(uint64_t n) { take(n); }
  uint64_t le(int bytes) {
    std::string_view v = take(bytes);
    uint64_t x = 0;
    for (size_t i = v.size(); i-- > 0;) x = (x << 8) | static_cast<uint8_t>(v[i]);
    return x;
  }

  // An RDB length. `encoded` is set (and the special encoding returned) for a
  // string's special encodings; where only a plain length may appear, pass
  // nullptr and an encoding is an error.
  uint64_t length(bool* encoded = nullptr) {
    if (encoded) *encoded = false;
    uint8_t b = u8();
    if (!ok()) return 0;
    switch (b >> 6) {
      case kLen6Bit: return b & 0x3f;
      case kLen14Bit: return (static_cast<uint64_t>(b & 0x3f) << 8) | u8();
      case kLenEncoded:
        if (!encoded) return bad("a string encoding (" + hex_byte(b) + ") where a length belongs");
        *encoded = true;
        return b & 0x3f;
      default: break;
    }
    int bytes = b == kLen32Bit ? 4 : b == kLen64Bit ? 8 : 0;
    if (bytes == 0) return bad("length prefix " + hex_byte(b));
    std::string_view v = take(bytes);
    uint64_t x = 0;
    for (char c : v) x = (x << 8) | static_cast<uint8_t>(c);
    return x;
  }

  void skip_string() { string_extent(nullptr); }
  // Decodes a string (integer and LZF encodings included) into `out`.
  void read_string(std::string& out) { string_extent(&out); }

  // A score of the original zset type: a length byte, or 253/254/255 for
  // nan/+inf/-inf with no digits following.
  void skip_double_string() {
    uint8_t len = u8();
    if (ok() && len < 253) skip(len);
  }

  // Module opcodes up to and including the module EOF. Returns true when the
  // EOF was read; false after one other opcode (call again) or on failure.
  bool module_opcode() {
    uint64_t op = length();
    if (!ok()) return false;
    switch (op) {
      case kModuleEof: return true;
      case kModuleSint:
      case kModuleUint: length(); return false;
      case kModuleFloat: skip(4); return false;
      case kModuleDouble: skip(8); return false;
      case kModuleString: skip_string(); return false;
      default: bad("module value opcode " + std::to_string(op)); return false;
    }
  }

  uint64_t bad(std::string why) {
    if (ok()) {
      state_ = kBad;
      error_ = std::move(why);
    }
    return 0;
  }

 private:
  enum State { kOk, kShort, kBad };

  bool want(uint64_t n) {
    if (!ok()) return false;
    if (n <= size_ - pos_) return true;
    state_ = kShort;
    need_ = n > UINT64_MAX - pos_ ? UINT64_MAX : pos_ + n;
    return false;
  }

  void string_extent(std::string* out) {
    bool encoded = false;
    uint64_t len = length(&encoded);
    if (!ok()) return;
    if (!encoded) {
      if (len > limits_.max_string_bytes) {
        bad("a string of " + std::to_string(len) + " bytes, above the limit of " +
            std::to_string(limits_.max_string_bytes) + " (rdb::Limits::max_string_bytes)");
        return;
      }
      std::string_view v = take(len);
      if (out && ok()) out->assign(v);
      return;
    }
    switch (len) {
      case kEncInt8: return integer(1, out);
      case kEncInt16: return integer(2, out);
      case kEncInt32: return integer(4, out);
      case kEncLzf: return lzf(out);
      default: bad("string encoding " + std::to_string(len));
    }
  }

  void integer(int bytes, std::string* out) {
    uint64_t raw = le(bytes);
    if (!out || !ok()) return;
    int shift = 64 - 8 * bytes;  // sign-extend
    *out = std::to_string(static_cast<int64_t>(raw << shift) >> shift);
  }

  void lzf(std::string* out) {
    uint64_t clen = length();
    uint64_t ulen = length();
    if (!ok()) return;
    if (clen > limits_.max_string_bytes || ulen > limits_.max_string_bytes) {
      bad("an LZF string of " + std::to_string(ulen) + " bytes, above the limit of " +
          std::to_string(limits_.max_string_bytes) + " (rdb::Limits::max_string_bytes)");
      return;
    }
    // Checked before decompressing, so a lying header cannot make us allocate.
    if (ulen == 0 || ulen > clen * kLzfMaxExpansion) {
      bad("an LZF string claiming " + std::to_string(ulen) + " bytes from " + std::to_string(clen));
      return;
    }
    std::string_view in = take(clen);
    if (!out || !ok()) return;
    auto plain = lzf_decompress(in, ulen);
    if (!plain.ok()) {
      bad(plain.status().message());
      return;
    }
    *out = std::move(*plain);
  }

  const char* data_;
  size_t size_;
  size_t pos_;
  const Limits& limits_;
  State state_ = kOk;
  uint64_t need_ = 0;
  std::string error_;
};

// A pseudo type for MODULE_AUX data, walked like a module value.
constexpr uint8_t kModuleAuxWalk = kOpModuleAux;

}  // namespace rrs::rdb::detail
