#include "proto/dump_payload.h"

#include <cstring>

#include "proto/crc64.h"
#include "proto/rdb_format.h"

namespace rrs::dump {

bool crc_ok(std::string_view payload) {
  if (payload.size() < kTrailerSize) return false;
  const size_t body = payload.size() - 8;
  uint64_t want = 0;
  for (size_t i = 8; i-- > 0;) want = (want << 8) | static_cast<uint8_t>(payload[body + i]);
  return crc64(0, payload.data(), body) == want;
}

std::optional<uint16_t> rdb_version(std::string_view payload) {
  if (payload.size() < kTrailerSize) return std::nullopt;
  auto b = [&](size_t i) { return static_cast<uint16_t>(static_cast<unsigned char>(payload[i])); };
  size_t at = payload.size() - kTrailerSize;
  return static_cast<uint16_t>(b(at) | (b(at + 1) << 8));
}

namespace {

// Fills the trailer after `body_len` bytes at `out`: the version, then the
// CRC-64 of everything before the CRC.
void write_trailer(char* out, size_t body_len, uint16_t rdb_version) {
  char* trailer = out + body_len;
  trailer[0] = static_cast<char>(rdb_version & 0xff);
  trailer[1] = static_cast<char>(rdb_version >> 8);
  uint64_t crc = crc64(0, out, body_len + 2);
  for (int i = 0; i < 8; ++i) trailer[2 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
}

}  // namespace

void write_payload(uint8_t type, std::string_view value, uint16_t rdb_version, char* out) {
  out[0] = static_cast<char>(type);
  std::memcpy(out + 1, value.data(), value.size());
  write_trailer(out, 1 + value.size(), rdb_version);
}

void restamp(std::span<char> payload, uint16_t rdb_version) {
  if (payload.size() < kTrailerSize) return;
  write_trailer(payload.data(), payload.size() - kTrailerSize, rdb_version);
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

}  // namespace rrs::dump
