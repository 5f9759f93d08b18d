// Logging to stderr with the program name, so interleaved output from the
// sidecar, the client and Redis stays attributable. stdout is reserved for
// the machine-readable lines (`ready ...`, `synced ...`).
#pragma once

#include <string>
#include <string_view>

namespace rrs::log {

void set_program(const char* name);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);

// Untrusted bytes (a key, a peer's argument) as they may appear in a message:
// at most 64 of them, non-printable ones and '\' as \xNN, "..." if cut.
std::string printable(std::string_view bytes);

}  // namespace rrs::log
