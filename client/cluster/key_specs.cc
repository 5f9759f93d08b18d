#include "client/cluster/key_specs.h"

#include <charconv>
#include <string>

namespace rrs {
namespace {

constexpr long long kMaxField = 1000000;

std::string_view text(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return {};
  return {r->str, r->len};
}

// The value of `name` in a RESP2 map (a flat array of name, value).
const redisReply* field(const redisReply* map, std::string_view name) {
  if (map == nullptr || map->type != REDIS_REPLY_ARRAY) return nullptr;
  for (size_t i = 0; i + 1 < map->elements; i += 2)
    if (text(map->element[i]) == name) return map->element[i + 1];
  return nullptr;
}

std::optional<int> integer(const redisReply* map, std::string_view name) {
  const redisReply* r = field(map, name);
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER || r->integer < -kMaxField ||
      r->integer > kMaxField)
    return std::nullopt;
  return static_cast<int>(r->integer);
}

bool incomplete(const redisReply* spec) {
  const redisReply* flags = field(spec, "flags");
  if (flags == nullptr || flags->type != REDIS_REPLY_ARRAY) return true;
  for (size_t i = 0; i < flags->elements; ++i)
    if (text(flags->element[i]) == "incomplete") return true;
  return false;
}

std::optional<KeySpec> parse_one(const redisReply* spec) {
  if (incomplete(spec)) return std::nullopt;
  const redisReply* begin = field(spec, "begin_search");
  const redisReply* find = field(spec, "find_keys");
  if (text(field(begin, "type")) != "index" || !find) return std::nullopt;
  KeySpec k;
  auto index = integer(field(begin, "spec"), "index");
  if (!index || *index < 1) return std::nullopt;
  k.begin = *index;
  const redisReply* how = field(find, "spec");
  const std::string_view type = text(field(find, "type"));
  std::optional<int> a, b, c;
  if (type == "range") {
    a = integer(how, "lastkey"), b = integer(how, "keystep"), c = integer(how, "limit");
    if (!a || !b || !c || *b < 1 || *c < 0) return std::nullopt;
    k.lastkey = *a, k.keystep = *b, k.limit = *c;
  } else if (type == "keynum") {
    k.keynum = true;
    a = integer(how, "keynumidx"), b = integer(how, "firstkey"), c = integer(how, "keystep");
    if (!a || !b || !c || *a < 0 || *b < 0 || *c < 1) return std::nullopt;
    k.keynumidx = *a, k.firstkey = *b, k.keystep = *c;
  } else {
    return std::nullopt;
  }
  return k;
}

}  // namespace

std::optional<std::vector<KeySpec>> parse_key_specs(const redisReply& specs) {
  // None: its keys are found by code of its own (a module's), not by specs.
  if (specs.type != REDIS_REPLY_ARRAY || specs.elements == 0) return std::nullopt;
  std::vector<KeySpec> out;
  for (size_t i = 0; i < specs.elements; ++i) {
    auto k = parse_one(specs.element[i]);
    if (!k) return std::nullopt;
    out.push_back(*k);
  }
  return out;
}

// As the server evaluates a spec (getKeysUsingKeySpecs).
std::optional<std::vector<size_t>> keys_by_specs(const std::vector<KeySpec>& specs,
                                                 std::span<const std::string_view> args) {
  const long long argc = static_cast<long long>(args.size());
  std::vector<size_t> at;
  for (const KeySpec& k : specs) {
    long long first = k.begin, last = 0, step = k.keystep;
    if (first >= argc) return std::nullopt;
    if (!k.keynum) {
      if (k.lastkey >= 0)
        last = first + k.lastkey;
      else
        last = k.limit == 0 ? argc + k.lastkey : first + (argc - first) / k.limit + k.lastkey;
    } else {
      if (first + k.keynumidx >= argc) return std::nullopt;
      const std::string_view n = args[static_cast<size_t>(first + k.keynumidx)];
      long long count = -1;
      auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
      if (ec != std::errc() || p != n.data() + n.size() || count < 0 || count > argc)
        return std::nullopt;
      first += k.firstkey;
      last = first + (count - 1) * step;
    }
    for (long long i = first; i <= last; i += step) {
      if (i >= argc) return std::nullopt;
      at.push_back(static_cast<size_t>(i));
    }
  }
  return at;
}

}  // namespace rrs
