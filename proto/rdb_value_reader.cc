#include "proto/rdb_value_reader.h"

#include "proto/listpack.h"
#include "proto/lzf.h"
#include "proto/rdb_format.h"

namespace rrs::rdb {

bool ValueReader::fail(const std::string& why) {
  if (ok()) error_ = "at byte " + std::to_string(pos_) + " of the value: " + why;
  return false;
}

bool ValueReader::at_end(const char* what) {
  if (!ok()) return false;
  if (pos_ == v_.size()) return true;
  return fail(std::to_string(v_.size() - pos_) + " bytes after the " + what);
}

bool ValueReader::skip(uint64_t n, const char* what) {
  if (!ok()) return false;
  if (n > v_.size() - pos_)
    return fail(what + std::string(" (") + std::to_string(n) + " bytes) past the end");
  pos_ += n;
  return true;
}

bool ValueReader::fixed_le(size_t bytes, uint64_t& out, const char* what) {
  const size_t at = pos_;
  if (!skip(bytes, what)) return false;
  out = 0;
  for (size_t i = bytes; i-- > 0;) out = (out << 8) | static_cast<uint8_t>(v_[at + i]);
  return true;
}

bool ValueReader::length(uint64_t& out, const char* what) {
  if (!ok()) return false;
  if (pos_ >= v_.size()) return fail(what + std::string(": a length past the end"));
  const auto b = static_cast<uint8_t>(v_[pos_]);
  switch (b >> 6) {
    case kLen6Bit: out = b & 0x3f, ++pos_; return true;
    case kLen14Bit:
      if (v_.size() - pos_ < 2) return fail(what + std::string(": a length past the end"));
      out = (uint64_t{b & 0x3fu} << 8) | static_cast<uint8_t>(v_[pos_ + 1]);
      pos_ += 2;
      return true;
    case kLenEncoded:
      return fail(what + std::string(": a string encoding (") + std::to_string(b) +
                  ") where a length belongs");
    default: break;
  }
  const size_t bytes = b == kLen32Bit ? 4 : b == kLen64Bit ? 8 : 0;
  if (bytes == 0) return fail(what + std::string(": length prefix ") + std::to_string(b));
  if (v_.size() - pos_ - 1 < bytes) return fail(what + std::string(": a length past the end"));
  out = 0;
  for (size_t i = 1; i <= bytes; ++i) out = (out << 8) | static_cast<uint8_t>(v_[pos_ + i]);
  pos_ += 1 + bytes;
  return true;
}

bool ValueReader::string(std::string_view* encoded, std::string_view* content, std::string& scratch,
                         const char* what) {
  if (!ok()) return false;
  const size_t start = pos_;
  if (pos_ >= v_.size()) return fail(what + std::string(": a string past the end"));
  const auto b = static_cast<uint8_t>(v_[pos_]);
  if (b >> 6 != kLenEncoded) {
    uint64_t n = 0;
    if (!length(n, what)) return false;
    if (n > v_.size() - pos_)
      return fail(what + std::string(": a string of ") + std::to_string(n) + " bytes past the end");
    if (content) *content = v_.substr(pos_, n);
    pos_ += n;
  } else {
    ++pos_;
    switch (b & 0x3f) {
      case kEncInt8: integer(1, content, scratch, what); break;
      case kEncInt16: integer(2, content, scratch, what); break;
      case kEncInt32: integer(4, content, scratch, what); break;
      case kEncLzf: lzf(content, scratch, what); break;
      default: return fail(what + std::string(": string encoding ") + std::to_string(b & 0x3f));
    }
    if (!ok()) return false;
  }
  if (encoded) *encoded = v_.substr(start, pos_ - start);
  return true;
}

void ValueReader::integer(size_t bytes, std::string_view* content, std::string& scratch,
                          const char* what) {
  uint64_t raw = 0;
  if (!fixed_le(bytes, raw, what) || !content) return;
  const unsigned shift = static_cast<unsigned>(64 - 8 * bytes);  // sign-extend
  char digits[listpack::kMaxIntDigits + 1];
  const size_t n = listpack::format_int(static_cast<int64_t>(raw << shift) >> shift, digits);
  scratch.assign(digits, n);
  *content = scratch;
}

void ValueReader::lzf(std::string_view* content, std::string& scratch, const char* what) {
  uint64_t clen = 0, ulen = 0;
  if (!length(clen, what) || !length(ulen, what)) return;
  if (ulen == 0 || ulen > max_string_) {
    fail(what + std::string(": an LZF string of ") + std::to_string(ulen) +
         " bytes (the limit is " + std::to_string(max_string_) + ")");
    return;
  }
  if (clen > v_.size() - pos_) {
    fail(what + std::string(": an LZF string of ") + std::to_string(clen) +
         " compressed bytes past the end");
    return;
  }
  const std::string_view compressed = v_.substr(pos_, clen);
  if (!content) {  // only copied: checked without writing it out
    Status st = lzf_check(compressed, ulen);
    if (!st.ok()) {
      fail(what + std::string(": ") + st.message());
      return;
    }
    pos_ += clen;
    return;
  }
  auto plain = lzf_decompress(compressed, ulen);  // checks ulen against clen first
  if (!plain.ok()) {
    fail(what + std::string(": ") + plain.status().message());
    return;
  }
  pos_ += clen;
  scratch = std::move(*plain);
  *content = scratch;
}

}  // namespace rrs::rdb
