// libFuzzer target: the RESP command-stream parser (proto/resp_parser.h),
// fed the way the replication link feeds it, in fragments of any size.
//
// Input: 8 bytes that seed the fragment sizes (little-endian), then the
// stream. corpus/resp holds small replication streams behind such a prefix.
// An input shorter than 8 bytes is all stream, seed 0.
//
// Each input is parsed twice: fed whole, and fed in fragments of 1..4096
// bytes (mostly tiny), draining next() after every fragment. Both runs must
// give the same commands, the same error (message included: lines are judged
// only when complete, so not even the quoted bytes may differ) and the same
// consumed() and skipped() (and buffered(), without an error). Checked after
// every call to next():
//   - an error is sticky (also after more bytes) and classified kBadData;
//   - consumed() never decreases, and consumed() + buffered() is what was fed;
//   - a command has 1..max_args arguments of at most max_bulk_bytes, takes at
//     most max_command_bytes, and re-encodes to exactly the input bytes it
//     came from (strict parsing leaves one encoding per command);
//   - what lies between commands is empty lines only, and the sum of the
//     commands' stream_bytes plus skipped() is consumed().
//
// Limits are small (16 Ki arguments, 64 KiB bulks, 256 KiB commands), so no
// input makes the parser hold much more than the input itself; run.sh adds
// -malloc_limit_mb to catch any allocation that does. One seed in four
// (seed & 3 == 3) uses tiny limits instead, to reach the limit checks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/crc64.h"
#include "proto/resp_parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using rrs::resp::CommandParser;
using rrs::resp::Limits;

constexpr Limits kLimits{
    .max_args = 16 << 10, .max_bulk_bytes = 64 << 10, .max_command_bytes = 256 << 10};

// A command reduced to what identifies it, to compare two runs.
struct Seen {
  uint64_t argc = 0, stream_bytes = 0, digest = 0;
  bool operator==(const Seen&) const = default;
};

std::string describe(const Seen& s) {
  return "{argc " + std::to_string(s.argc) + ", " + std::to_string(s.stream_bytes) +
         " bytes, digest " + std::to_string(s.digest) + "}";
}

// True when `s` is nothing but empty lines: "\r\n" or "\n".
bool only_empty_lines(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')
      ++i;
    else if (s[i] != '\n')
      return false;
  }
  return true;
}

struct Outcome {
  std::vector<Seen> commands;
  std::optional<std::string> error;
  uint64_t consumed = 0, skipped = 0;
  size_t buffered = 0;
};

// Parses `stream` fed whole (frags == nullptr) or in fragments, checking the
// parser's invariants after every call.
Outcome parse(std::string_view stream, const Limits& limits, rrs::fuzz::Fragments* frags) {
  CommandParser p(limits);
  Outcome out;
  size_t fed = 0;
  uint64_t last_consumed = 0, command_bytes = 0;
  std::string encoded;

  // Takes commands until the parser needs more bytes; false once it failed.
  auto drain = [&]() -> bool {
    while (true) {
      auto cmd = p.next();
      if (cmd.ok() && *cmd) {
        const auto& c = **cmd;
        FUZZ_CHECK(!c.args.empty() && c.args.size() <= limits.max_args,
                   "a command of " + std::to_string(c.args.size()) + " arguments");
        FUZZ_CHECK(c.stream_bytes <= limits.max_command_bytes,
                   "a command of " + std::to_string(c.stream_bytes) + " bytes");
        FUZZ_CHECK(c.stream_bytes <= p.consumed() - last_consumed,
                   "stream_bytes " + std::to_string(c.stream_bytes) + " beyond what was consumed");
        // Every byte the views point at is read here, and must be the input's.
        encoded = "*" + std::to_string(c.args.size()) + "\r\n";
        for (std::string_view a : c.args) {
          FUZZ_CHECK(a.size() <= limits.max_bulk_bytes,
                     "an argument of " + std::to_string(a.size()) + " bytes");
          encoded += "$" + std::to_string(a.size()) + "\r\n";
          encoded += a;
          encoded += "\r\n";
        }
        const uint64_t start = p.consumed() - c.stream_bytes;
        FUZZ_CHECK(encoded.size() == c.stream_bytes &&
                       stream.substr(start, c.stream_bytes) == encoded,
                   "the command at " + std::to_string(start) + " does not re-encode to its " +
                       std::to_string(c.stream_bytes) + " input bytes");
        FUZZ_CHECK(only_empty_lines(stream.substr(last_consumed, start - last_consumed)),
                   "bytes " + std::to_string(last_consumed) + " to " + std::to_string(start) +
                       " skipped between commands are not empty lines");
        command_bytes += c.stream_bytes;
        out.commands.push_back(
            {c.args.size(), c.stream_bytes, rrs::crc64(0, encoded.data(), encoded.size())});
      }
      FUZZ_CHECK(p.consumed() >= last_consumed, "consumed() went from " +
                                                    std::to_string(last_consumed) + " to " +
                                                    std::to_string(p.consumed()));
      if (cmd.ok() && !*cmd)
        FUZZ_CHECK(only_empty_lines(stream.substr(last_consumed, p.consumed() - last_consumed)),
                   "bytes " + std::to_string(last_consumed) + " to " +
                       std::to_string(p.consumed()) +
                       " skipped after the last command are not empty lines");
      last_consumed = p.consumed();
      FUZZ_CHECK(command_bytes + p.skipped() == p.consumed(),
                 "commands " + std::to_string(command_bytes) + " + skipped " +
                     std::to_string(p.skipped()) + " != consumed " + std::to_string(p.consumed()));
      FUZZ_CHECK(p.consumed() + p.buffered() == fed,
                 "consumed " + std::to_string(p.consumed()) + " + buffered " +
                     std::to_string(p.buffered()) + " != fed " + std::to_string(fed));
      if (!cmd.ok()) {
        const rrs::Status& st = cmd.status();
        out.error = st.message();
        FUZZ_CHECK(st.kind() == rrs::ErrorKind::kBadData, "error not kBadData: " + *out.error);
        auto again = p.next();
        FUZZ_CHECK(!again.ok() && again.status().message() == *out.error,
                   "error not sticky: " + *out.error);
        p.feed(std::string_view("*1\r\n$4\r\nPING\r\n"));
        again = p.next();
        FUZZ_CHECK(!again.ok() && again.status().message() == *out.error,
                   "error not sticky after more bytes: " + *out.error);
        return false;
      }
      if (!*cmd) return true;
    }
  };

  bool ok = drain();  // nothing fed yet
  while (ok && fed < stream.size()) {
    const size_t left = stream.size() - fed;
    const size_t n = frags ? std::min(frags->next_size(), left) : left;
    p.feed(stream.substr(fed, n));
    fed += n;
    ok = drain();
  }
  out.consumed = p.consumed();
  out.skipped = p.skipped();
  out.buffered = p.buffered();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint64_t seed = rrs::fuzz::take_seed(data, size);
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  rrs::fuzz::Fragments frags(seed);
  Limits limits = kLimits;
  if ((seed & 3) == 3) {
    limits.max_args = 1 + ((seed >> 2) & 15);
    limits.max_bulk_bytes = (seed >> 6) & 63;
    limits.max_command_bytes = 8 + ((seed >> 12) & 255);
  }

  Outcome whole = parse(stream, limits, nullptr);
  Outcome split = parse(stream, limits, &frags);
  for (size_t i = 0; i < std::min(whole.commands.size(), split.commands.size()); ++i)
    FUZZ_CHECK(whole.commands[i] == split.commands[i],
               "command " + std::to_string(i) + ": whole " + describe(whole.commands[i]) +
                   ", split " + describe(split.commands[i]));
  FUZZ_CHECK(whole.commands.size() == split.commands.size(),
             "whole feeding gave " + std::to_string(whole.commands.size()) + " commands, split " +
                 std::to_string(split.commands.size()));
  FUZZ_CHECK(whole.error == split.error, "whole: " + whole.error.value_or("no error") +
                                             "; split: " + split.error.value_or("no error"));
  // After an error the split run has not fed the rest: buffered() differs.
  FUZZ_CHECK(whole.consumed == split.consumed && whole.skipped == split.skipped &&
                 (whole.error || whole.buffered == split.buffered),
             "whole: consumed " + std::to_string(whole.consumed) + " skipped " +
                 std::to_string(whole.skipped) + " buffered " + std::to_string(whole.buffered) +
                 "; split: consumed " + std::to_string(split.consumed) + " skipped " +
                 std::to_string(split.skipped) + " buffered " + std::to_string(split.buffered));
  return 0;
}
