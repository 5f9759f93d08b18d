#include "client/verify/report.h"

#include <cstdio>

namespace rrs::verify {

std::string escape(std::string_view bytes, size_t limit) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes.substr(0, limit)) {
    if (c > 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return bytes.size() > limit ? out + "..." : out;
}

std::string difference_line(std::string_view key, uint32_t db, const Difference& d) {
  constexpr size_t kValueLimit = 64;
  return "different key=" + escape(key) + " db=" + std::to_string(db) + " what=" + d.what +
         " source=" + escape(d.source, kValueLimit) + " target=" + escape(d.target, kValueLimit);
}

std::string library_line(std::string_view name, const Difference& d) {
  constexpr size_t kCodeLimit = 64;
  return "different library=" + escape(name) + " what=" + d.what +
         " source=" + escape(d.source, kCodeLimit) + " target=" + escape(d.target, kCodeLimit);
}

std::string summary_line(const VerifyCounts& c, double seconds) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", seconds);
  return std::string("verify: ") + (c.equal() ? "equal" : "different") +
         " keys=" + std::to_string(c.keys) + " compared=" + std::to_string(c.compared) +
         " different=" + std::to_string(c.different) + " missing=" + std::to_string(c.missing) +
         " extra=" + std::to_string(c.extra) +
         " libraries=" + (c.libraries_compared ? std::to_string(c.libraries) : "-") +
         " libraries_different=" + std::to_string(c.libraries_different) + " seconds=" + s;
}

}  // namespace rrs::verify
