#include "common/base/log.h"

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

std::string printable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, 64)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return bytes.size() > 64 ? out + "..." : out;
}

}  // namespace rrs::log
