// A tiny command-line reader shared by both programs: "--name value",
// "--name=value", boolean "--name", and positionals, in any order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rrs {

class ArgReader {
 public:
  ArgReader(int argc, char** argv) : args_(argv + 1, argv + argc) {}

  bool done() const { return i_ >= args_.size(); }
  std::string_view current() const { return args_[i_]; }
  bool is_flag() const { return current().size() > 1 && current()[0] == '-'; }

  // If the current argument is boolean flag `name`, consumes it.
  bool flag(std::string_view name);
  // If the current argument is option `name`, consumes it and its value;
  // a missing value is remembered as an error.
  bool option(std::string_view name, std::string& value);
  std::string positional() { return std::string(args_[i_++]); }

  // Call when nothing matched the current argument.
  void unknown() { fail("unknown option '" + std::string(args_[i_++]) + "'"); }
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }
  const std::string& error() const { return error_; }

 private:
  std::vector<std::string_view> args_;
  size_t i_ = 0;
  std::string error_;
};

// Strict numeric parsing for flag values: the whole text, within [lo, hi].
Result<uint64_t> parse_uint(std::string_view flag, std::string_view text, uint64_t lo, uint64_t hi);
// Sizes like "1048576", "1M", "64k", "2G" (binary units).
Result<uint64_t> parse_size(std::string_view flag, std::string_view text, uint64_t lo, uint64_t hi);

}  // namespace rrs
