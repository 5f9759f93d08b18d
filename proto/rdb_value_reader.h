// Reads the RDB encodings inside one value (rdb::Event::value, a DUMP
// payload's middle) from the front: lengths, strings in each of their
// encodings, fixed-width integers. Untrusted bytes: every read is
// bounds-checked, and the first failure sticks (later reads fail at once),
// so walkers check ok() once per element. LZF strings are decompressed only
// after their declared sizes are checked against the input and `max_string`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rrs::rdb {

class ValueReader {
 public:
  ValueReader(std::string_view v, uint64_t max_string) : v_(v), max_string_(max_string) {}

  bool ok() const { return error_.empty(); }
  size_t pos() const { return pos_; }
  std::string_view value() const { return v_; }
  const std::string& error() const { return error_; }

  // Records the first failure (with where it happened); always false.
  bool fail(const std::string& why);
  // True at the value's end; bytes left over are a failure.
  bool at_end(const char* what);
  bool skip(uint64_t n, const char* what);
  // A little-endian integer of `bytes` bytes.
  bool fixed_le(size_t bytes, uint64_t& out, const char* what);
  // An RDB length (big-endian after the 32/64-bit prefixes); a string
  // encoding byte here is malformed.
  bool length(uint64_t& out, const char* what);
  // An RDB string, checked: `encoded` is its bytes as they stand (to copy
  // into another value), `content` what it holds: viewed in place when
  // plain, decompressed into `scratch` when LZF, an integer encoding's
  // digits in `scratch`. Either may be null; without `content` an LZF
  // string is checked (lzf_check) but not written out, so a string that is
  // only copied costs no memory however large it says it is.
  bool string(std::string_view* encoded, std::string_view* content, std::string& scratch,
              const char* what);

 private:
  void integer(size_t bytes, std::string_view* content, std::string& scratch, const char* what);
  void lzf(std::string_view* content, std::string& scratch, const char* what);

  std::string_view v_;
  size_t pos_ = 0;
  uint64_t max_string_;
  std::string error_;
};

}  // namespace rrs::rdb
