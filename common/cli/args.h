// A tiny command-line reader shared by both programs: "--name value",
// "--name=value", boolean "--name", and positionals, in any order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/net/endpoint.h"

namespace rrs {

class ArgReader {
 public:
  ArgReader(int argc, char** argv) : args_(argv + 1, argv + argc) {}

  bool done() const { return i_ >= args_.size(); }
  std::string_view current() const { return args_[i_]; }
  // The argument just consumed (to tell which of several flags matched).
  std::string_view previous() const { return args_[i_ - 1]; }
  bool is_flag() const { return current().size() > 1 && current()[0] == '-'; }

  // If the current argument is boolean flag `name`, consumes it.
  bool flag(std::string_view name);
  // If the current argument is option `name`, consumes it and its value;
  // a missing value is remembered as an error.
  bool option(std::string_view name, std::string& value);
  std::string positional() { return std::string(args_[i_++]); }

  // Typed options: if the current argument is `name`, consume it and parse
  // its value into `out`; a bad value is remembered as the error.
  bool endpoint(std::string_view name, Endpoint& out);
  bool port(std::string_view name, uint16_t& out);
  // Whole numbers in [lo, hi]; sizes also take k/M/G suffixes.
  template <typename T>
  bool number(std::string_view name, uint64_t lo, uint64_t hi, T& out) {
    return narrow(number_u64(name, lo, hi, scratch_), out);
  }
  template <typename T>
  bool size(std::string_view name, uint64_t lo, uint64_t hi, T& out) {
    return narrow(size_u64(name, lo, hi, scratch_), out);
  }

  // Call when nothing matched the current argument.
  void unknown() { fail("unknown option '" + std::string(args_[i_++]) + "'"); }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  const std::string& error() const { return error_; }

 private:
  bool number_u64(std::string_view name, uint64_t lo, uint64_t hi, uint64_t& out);
  bool size_u64(std::string_view name, uint64_t lo, uint64_t hi, uint64_t& out);
  template <typename T>
  bool narrow(bool matched, T& out) {
    if (matched && error_.empty()) out = static_cast<T>(scratch_);  // hi fits T by contract
    return matched;
  }

  uint64_t scratch_ = 0;
  std::vector<std::string_view> args_;
  size_t i_ = 0;
  std::string error_;
};

// Strict numeric parsing for flag values: the whole text, within [lo, hi].
Result<uint64_t> parse_uint(std::string_view flag, std::string_view text, uint64_t lo, uint64_t hi);
// Sizes like "1048576", "1M", "64k", "2G" (binary units).
Result<uint64_t> parse_size(std::string_view flag, std::string_view text, uint64_t lo, uint64_t hi);

}  // namespace rrs
