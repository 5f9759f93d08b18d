#include "client/verify/key_compare.h"

#include <array>
#include <string_view>

namespace rrs::verify {
namespace {

// XINFO STREAM FULL fields that only some versions report (7.0 added the
// entries-added/max-deleted/recorded-first ids and the groups' entries-read
// and lag; 7.2 changed seen-time and added active-time): compared where both
// sides have them, not missed where one side lacks them.
constexpr std::array<std::string_view, 7> kVersionedStreamFields = {
    "entries-added", "max-deleted-entry-id", "recorded-first-entry-id", "entries-read", "lag",
    "seen-time",     "active-time"};

bool versioned(std::string_view path) {
  const size_t dot = path.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? path : path.substr(dot + 1);
  for (std::string_view f : kVersionedStreamFields)
    if (last == f) return true;
  return false;
}

// "path=value", or the value alone for a string (whose path is "").
std::string at(const std::string& path, const std::string& value) {
  return path.empty() ? value : path + "=" + value;
}

std::optional<Difference> compare_values(const KeyState& s, const KeyState& t) {
  auto a = s.value.begin(), b = t.value.begin();
  const bool stream = s.type == "stream";
  while (a != s.value.end() || b != t.value.end()) {
    if (b == t.value.end() || (a != s.value.end() && a->first < b->first)) {
      if (!(stream && versioned(a->first)))
        return Difference{"value", at(a->first, a->second), a->first + " absent"};
      ++a;
    } else if (a == s.value.end() || b->first < a->first) {
      if (!(stream && versioned(b->first)))
        return Difference{"value", b->first + " absent", at(b->first, b->second)};
      ++b;
    } else {
      if (a->second != b->second)
        return Difference{"value", at(a->first, a->second), at(b->first, b->second)};
      ++a, ++b;
    }
  }
  return std::nullopt;
}

bool close(int64_t a, int64_t b, int64_t tolerance) { return (a > b ? a - b : b - a) <= tolerance; }

std::string ttl_text(int64_t pttl) { return pttl == kNoExpiry ? "none" : std::to_string(pttl); }

std::optional<Difference> compare_field_expiry(const KeyState& s, const KeyState& t,
                                               int64_t tolerance) {
  for (const auto& [field, when] : s.field_expiry) {
    auto other = t.field_expiry.find(field);
    if (other == t.field_expiry.end())
      return Difference{"field-ttl", at(field, std::to_string(when)), at(field, "none")};
    if (!close(when, other->second, tolerance))
      return Difference{"field-ttl", at(field, std::to_string(when)),
                        at(field, std::to_string(other->second))};
  }
  for (const auto& [field, when] : t.field_expiry)
    if (!s.field_expiry.contains(field))
      return Difference{"field-ttl", at(field, "none"), at(field, std::to_string(when))};
  return std::nullopt;
}

}  // namespace

std::optional<Difference> compare_key(const KeyState& s, const KeyState& t,
                                      int64_t ttl_tolerance_ms) {
  if (!t.exists()) return Difference{"missing", s.type, "none"};
  if (s.type != t.type) return Difference{"type", s.type, t.type};
  if (auto d = compare_values(s, t)) return d;
  const bool s_ttl = s.pttl >= 0, t_ttl = t.pttl >= 0;
  if (s_ttl != t_ttl || (s_ttl && !close(s.pttl, t.pttl, ttl_tolerance_ms)))
    return Difference{"ttl", ttl_text(s.pttl), ttl_text(t.pttl)};
  return compare_field_expiry(s, t, ttl_tolerance_ms);
}

}  // namespace rrs::verify
