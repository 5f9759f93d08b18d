#include "common/log.h"

#include <cstdio>
#include <mutex>

namespace rrs::log {
namespace {
const char* g_program = "rrs";
std::mutex g_mu;

void emit(const char* level, const std::string& msg) {
  std::lock_guard lock(g_mu);
  std::fprintf(stderr, "%s: %s%s\n", g_program, level, msg.c_str());
}
}  // namespace

void set_program(const char* name) { g_program = name; }
void info(const std::string& msg) { emit("", msg); }
void warn(const std::string& msg) { emit("warning: ", msg); }
void error(const std::string& msg) { emit("error: ", msg); }

}  // namespace rrs::log
