// Each program's flags, declared once in a table: the parser, --help,
// --help-all (and so the man page) and docs/usage.md's flag tables all come
// from it. Our own table rather than CLI11: ArgReader's typed parsers and
// their exact error texts (which tests/integration/usage_test.cc pins) stay
// as they are, and the help keeps its hand-wrapped long text.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cli/args.h"
#include "common/net/endpoint.h"

namespace rrs {

// Which help text was asked for: -h/--help (the common flags),
// --help-all (everything), --help-markdown (hidden: docs/usage.md's table).
enum class HelpKind { kNone, kShort, kAll, kMarkdown };

// Parses one flag's value (empty for a boolean flag); a bad one fails `args`.
using FlagSetter = std::function<void(ArgReader& args, std::string_view name, const std::string&)>;

struct Flag {
  const char* name;   // "--redis"; "-h, --help" lists an alias first
  const char* value;  // the placeholder ("HOST:PORT"); "" for a boolean flag
  const char* def;    // the default as docs/usage.md shows it ("" none)
  const char* env;    // the environment variable read instead, if any
  const char* brief;  // one line, markdown: the short --help and docs/usage.md
  const char* more;   // --help-all's text, pre-wrapped at 54 columns
  bool common;        // shown by the short --help
  FlagSetter set;     // nullptr: documented only (positional arguments)
};

// The prose around a program's flags.
struct HelpText {
  const char* program;  // "rdma-server"
  const char* usage;    // the "Usage:" lines
  const char* intro;    // --help-all: before "Options:"
  const char* outro;    // --help-all: after the flags
  const char* summary;  // --help: one paragraph before "Options:"
};

// Reads argv against `flags`: every argument starting with '-' must be one
// of them (else "unknown option"); others go to `positional`, or are
// unknown options when `positional` is null. The first error is returned.
std::string parse_flags(int argc, char** argv, const std::vector<Flag>& flags,
                        std::vector<std::string>* positional);

// The help text of `kind` (kShort, kAll or kMarkdown).
std::string render_help(HelpKind kind, const HelpText& text, const std::vector<Flag>& flags);

// Setters for the common value types, with ArgReader's error texts.
FlagSetter set_true(bool& out);
FlagSetter set_string(std::string& out);
FlagSetter set_endpoint(Endpoint& out);
FlagSetter set_port(uint16_t& out);
FlagSetter set_number_u64(uint64_t lo, uint64_t hi, std::function<void(uint64_t)> out);
FlagSetter set_size_u64(uint64_t lo, uint64_t hi, std::function<void(uint64_t)> out);
template <typename T>
FlagSetter set_number(uint64_t lo, uint64_t hi, T& out) {  // hi fits T by contract
  return set_number_u64(lo, hi, [&out](uint64_t v) { out = static_cast<T>(v); });
}
template <typename T>
FlagSetter set_size(uint64_t lo, uint64_t hi, T& out) {
  return set_size_u64(lo, hi, [&out](uint64_t v) { out = static_cast<T>(v); });
}
// -h/--help, --help-all and the hidden --help-markdown.
FlagSetter set_help(HelpKind& out, HelpKind kind);

}  // namespace rrs
