#include "common/cli/args.h"

#include <charconv>

namespace rrs {

bool ArgReader::flag(std::string_view name) {
  if (done() || current() != name) return false;
  ++i_;
  return true;
}

bool ArgReader::option(std::string_view name, std::string& value) {
  if (done()) return false;
  std::string_view a = current();
  if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
    value = std::string(a.substr(name.size() + 1));
    ++i_;
    return true;
  }
  if (a != name) return false;
  ++i_;
  if (done()) {
    fail(std::string(name) + " needs a value");
    return true;
  }
  value = std::string(args_[i_++]);
  return true;
}

namespace {
// Parses the value of option `name`, if that is the current argument.
template <typename T, typename Parse>
bool typed_option(ArgReader& args, std::string_view name, T& out, Parse parse) {
  std::string v;
  if (!args.option(name, v)) return false;
  if (!args.error().empty()) return true;
  auto r = parse(v);
  if (r.ok())
    out = static_cast<T>(*r);
  else
    args.fail(std::string(name) + ": " + r.status().reason());
  return true;
}
}  // namespace

bool ArgReader::endpoint(std::string_view name, Endpoint& out) {
  return typed_option(*this, name, out, [](std::string_view v) { return parse_endpoint(v); });
}
bool ArgReader::port(std::string_view name, uint16_t& out) {
  return typed_option(*this, name, out, [](std::string_view v) { return parse_port(v); });
}
bool ArgReader::number_u64(std::string_view name, uint64_t lo, uint64_t hi, uint64_t& out) {
  return typed_option(*this, name, out,
                      [&](std::string_view v) { return parse_uint(name, v, lo, hi); });
}
bool ArgReader::size_u64(std::string_view name, uint64_t lo, uint64_t hi, uint64_t& out) {
  return typed_option(*this, name, out,
                      [&](std::string_view v) { return parse_size(name, v, lo, hi); });
}

Result<uint64_t> parse_uint(std::string_view flag, std::string_view text, uint64_t lo,
                            uint64_t hi) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    return Status::error(std::string(flag), "expected a whole number in " + std::to_string(lo) +
                                                ".." + std::to_string(hi) + ", got '" +
                                                std::string(text) + "'");
  return v;
}

Result<uint64_t> parse_size(std::string_view flag, std::string_view text, uint64_t lo,
                            uint64_t hi) {
  uint64_t mult = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k':
      case 'K': mult = 1ull << 10; break;
      case 'm':
      case 'M': mult = 1ull << 20; break;
      case 'g':
      case 'G': mult = 1ull << 30; break;
      default: break;
    }
    if (mult != 1) text.remove_suffix(1);
  }
  auto v = parse_uint(flag, text, 0, hi / mult);
  if (!v.ok() || *v * mult < lo)
    return Status::error(std::string(flag), "expected a size in " + std::to_string(lo) + ".." +
                                                std::to_string(hi) + " bytes (suffix k, M, G)");
  return *v * mult;
}

}  // namespace rrs
