#include "proto/dump_payload.h"

#include <charconv>
#include <cstring>

#include "proto/crc64.h"
#include "proto/rdb_format.h"

namespace rrs::dump {

std::optional<uint16_t> rdb_version(std::string_view payload) {
  if (payload.size() < kTrailerSize) return std::nullopt;
  auto b = [&](size_t i) { return static_cast<uint16_t>(static_cast<unsigned char>(payload[i])); };
  size_t at = payload.size() - kTrailerSize;
  return static_cast<uint16_t>(b(at) | (b(at + 1) << 8));
}

void write_payload(uint8_t type, std::string_view value, uint16_t rdb_version, char* out) {
  out[0] = static_cast<char>(type);
  std::memcpy(out + 1, value.data(), value.size());
  char* trailer = out + 1 + value.size();
  trailer[0] = static_cast<char>(rdb_version & 0xff);
  trailer[1] = static_cast<char>(rdb_version >> 8);
  uint64_t crc = crc64(0, out, 1 + value.size() + 2);
  for (int i = 0; i < 8; ++i) trailer[2 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
}

std::string function_restore_payload(const std::vector<std::string>& libraries,
                                     uint16_t rdb_version) {
  std::string out;
  for (const std::string& code : libraries) {
    out.push_back(static_cast<char>(rdb::kOpFunction2));
    rdb::append_length(out, code.size());
    out += code;
  }
  out.push_back(static_cast<char>(rdb_version & 0xff));
  out.push_back(static_cast<char>(rdb_version >> 8));
  uint64_t crc = crc64(0, out.data(), out.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return out;
}

const char* first_redis_for_rdb(uint16_t v) {
  switch (v) {
    case 6: return "2.6";
    case 7: return "3.2";
    case 8: return "4.0";
    case 9: return "5.0";
    case 10: return "7.0";
    case 11: return "7.2";
    case 12: return "7.4";
    default: return v < 6 ? "2.6" : "a release newer than 7.4";
  }
}

std::optional<uint16_t> max_rdb_for_redis(std::string_view version) {
  unsigned major = 0, minor = 0;
  auto [p, ec] = std::from_chars(version.data(), version.data() + version.size(), major);
  if (ec != std::errc() || p == version.data() + version.size() || *p != '.') return std::nullopt;
  std::from_chars(p + 1, version.data() + version.size(), minor);
  unsigned m = major * 100 + minor;
  if (m >= 704) return 12;
  if (m >= 702) return 11;
  if (m >= 700) return 10;
  if (m >= 500) return 9;
  if (m >= 400) return 8;
  if (m >= 302) return 7;
  return 6;
}

}  // namespace rrs::dump
