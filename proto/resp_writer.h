// The one RESP encoder: commands as a client sends them, an array of bulk
// strings (*<n>\r\n then $<len>\r\n<bytes>\r\n per argument), binary safe.
// Appends to a caller's buffer, so a pipeline is "append, append, write".
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace rrs::resp {

void append_array_header(std::string& out, size_t count);
void append_bulk(std::string& out, std::string_view bytes);
// The same bulk string written at `at` (bulk_size(bytes) bytes free there):
// for a caller that lays bulks out in its own memory. Returns where it ends.
size_t bulk_size(std::string_view bytes);
char* write_bulk(char* at, std::string_view bytes);

void append_command(std::string& out, std::initializer_list<std::string_view> argv);
void append_command(std::string& out, std::span<const std::string_view> argv);

inline std::string command(std::initializer_list<std::string_view> argv) {
  std::string out;
  append_command(out, argv);
  return out;
}

}  // namespace rrs::resp
