// One log record as the line written to stderr, in either of the two
// documented formats (docs/operations.md, "Logs"):
//   text: 2026-11-25T23:46:38.123Z rdma-server WARN message
//   json: {"ts":"2026-11-25T23:46:38.123Z","level":"warn","program":"rdma-server","msg":"message"}
// Pure functions of their arguments, so tests pin the exact bytes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace rrs::log {

enum class Level { kInfo, kWarn, kError };
enum class Format { kText, kJson };

// "text" or "json" (--log-format); nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);

// RFC 3339 in UTC with milliseconds: 2026-11-25T23:46:38.123Z.
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

// A JSON string literal (with its quotes) holding `bytes`: '"', '\' and
// control characters escaped, valid UTF-8 kept as is, and every byte that is
// not part of valid UTF-8 written as \u00XX (the byte's value as a code
// point), so the line is valid JSON whatever the message holds.
std::string json_string(std::string_view bytes);

// The whole line, with its '\n'. In text, a control character in `msg`
// (a newline, say) is written as \xNN: one record is always one line.
std::string format_line(Format format, std::chrono::system_clock::time_point t,
                        std::string_view program, Level level, std::string_view msg);

}  // namespace rrs::log
