// Logging to stderr with the program name, so interleaved output from the
// sidecar, the client and Redis stays attributable. stdout is reserved for
// the machine-readable lines (`ready ...`, `synced ...`).
#pragma once

#include <string>

namespace rrs::log {

void set_program(const char* name);
void info(const std::string& msg);
void warn(const std::string& msg);
void error(const std::string& msg);

}  // namespace rrs::log
