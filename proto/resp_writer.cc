#include "proto/resp_writer.h"

#include <charconv>

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

void append_command(std::string& out, std::span<const std::string_view> argv) {
  append_array_header(out, argv.size());
  for (std::string_view a : argv) append_bulk(out, a);
}

void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
  append_command(out, std::span<const std::string_view>(argv.begin(), argv.size()));
}

}  // namespace rrs::resp
