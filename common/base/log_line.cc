#include "common/base/log_line.h"

#include <ctime>

namespace rrs::log {
namespace {

constexpr char kHex[] = "0123456789abcdef";

const char* text_level(Level l) {
  switch (l) {
    case Level::kInfo: return "INFO";
    case Level::kWarn: return "WARN";
    case Level::kError: return "ERROR";
  }
  return "?";
}

const char* json_level(Level l) {
  switch (l) {
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "?";
}

void append_hex_byte(std::string& out, const char* prefix, unsigned char c) {
  out += prefix;
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}

bool continuation(std::string_view s, size_t i) {
  return i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80;
}

// The length of the well-formed UTF-8 sequence of 2 to 4 bytes starting at
// s[i] (Unicode's table 3-7: no overlong forms, no surrogates, nothing past
// U+10FFFF); 0 if there is none.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  size_t len = 0;
  bool second_ok = false;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, second_ok = true;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    second_ok = c == 0xe0 ? next >= 0xa0 : c == 0xed ? next <= 0x9f : true;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    second_ok = c == 0xf0 ? next >= 0x90 : c == 0xf4 ? next <= 0x8f : true;
  }
  if (len == 0 || !second_ok) return 0;
  for (size_t k = 1; k < len; ++k)
    if (!continuation(s, i + k)) return 0;
  return len;
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return std::nullopt;
}

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  auto secs = static_cast<time_t>(ms / 1000);
  auto frac = static_cast<int>(ms % 1000);
  if (frac < 0) secs -= 1, frac += 1000;  // before 1970: floor, not truncate
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out(buf, n);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
  out.push_back('Z');
  return out;
}

std::string json_string(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x80) {
      if (const size_t len = utf8_sequence(bytes, i)) {
        out.append(bytes.substr(i, len));
        i += len;
      } else {
        append_hex_byte(out, "\\u00", c);
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f)
          append_hex_byte(out, "\\u00", c);
        else
          out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back('"');
  return out;
}

std::string format_line(Format format, std::chrono::system_clock::time_point t,
                        std::string_view program, Level level, std::string_view msg) {
  std::string out;
  if (format == Format::kJson) {
    out = "{\"ts\":\"" + rfc3339_utc(t) + "\",\"level\":\"" + json_level(level) +
          "\",\"program\":" + json_string(program) + ",\"msg\":" + json_string(msg) + "}\n";
    return out;
  }
  out = rfc3339_utc(t);
  out.push_back(' ');
  out.append(program);
  out.push_back(' ');
  out += text_level(level);
  out.push_back(' ');
  for (const char ch : msg) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f)
      append_hex_byte(out, "\\x", c);
    else
      out.push_back(ch);
  }
  out.push_back('\n');
  return out;
}

}  // namespace rrs::log
