// Logging to stderr, one line per record with a UTC timestamp, the program
// name and a level (format: log_line.h, docs/operations.md, "Logs"), so interleaved output
// from the sidecar, the client and Redis stays attributable and a log shipper
// can parse it. stdout is reserved for the machine-readable lines
// (`ready ...`, `synced ...`).
#pragma once

#include <string>
#include <string_view>

#include "common/base/log_line.h"

namespace rrs::log {

// Both set once in main(), before anything logs.
void set_program(const char* name);
void set_format(Format format);
Format format();

void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);

// For what a peer can cause at will (each refused handshake): at most 10
// lines of `category` per 10 s, then one "... and N more like it in the last
// 10 s (category)" line when the interval ends. `category` is a fixed string
// naming the kind of line; thread-safe like the rest.
void info_limited(std::string_view category, const std::string& msg);
void warn_limited(std::string_view category, const std::string& msg);

// Writes the summaries of lines held back so far (before exiting).
void flush_limited();

// Untrusted bytes (a key, a peer's argument) as they may appear in a message:
// at most 64 of them, non-printable ones and '\' as \xNN, "..." if cut.
std::string printable(std::string_view bytes);

}  // namespace rrs::log
