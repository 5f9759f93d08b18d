#include "proto/resp_writer.h"

#include <charconv>
#include <cstring>

namespace rrs::resp {
namespace {

void append_prefixed(std::string& out, char type, size_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out.push_back(type);
  out.append(digits, end);
  out.append("\r\n", 2);
}

}  // namespace

void append_array_header(std::string& out, size_t count) { append_prefixed(out, '*', count); }

void append_bulk(std::string& out, std::string_view bytes) {
  append_prefixed(out, '$', bytes.size());
  out.append(bytes);
  out.append("\r\n", 2);
}

size_t bulk_size(std::string_view bytes) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, bytes.size());
  return 1 + static_cast<size_t>(end - digits) + 2 + bytes.size() + 2;
}

char* write_bulk(char* at, std::string_view bytes) {
  *at++ = '$';
  at = std::to_chars(at, at + 24, bytes.size()).ptr;
  *at++ = '\r';
  *at++ = '\n';
  std::memcpy(at, bytes.data(), bytes.size());
  at += bytes.size();
  *at++ = '\r';
  *at++ = '\n';
  return at;
}

void append_command(std::string& out, std::span<const std::string_view> argv) {
  append_array_header(out, argv.size());
  for (std::string_view a : argv) append_bulk(out, a);
}

void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
  append_command(out, std::span<const std::string_view>(argv.begin(), argv.size()));
}

}  // namespace rrs::resp
