#include "client/verify/key_state.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "client/verify/reply_shape.h"

namespace rrs::verify {
namespace {

// A leaf reply as bytes: a string as it is, an integer in decimal.
std::string leaf(const redisReply& r) {
  if (is_text(r)) return {r.str, r.len};
  if (r.type == REDIS_REPLY_INTEGER) return std::to_string(r.integer);
  if (r.type == REDIS_REPLY_NIL) return "(nil)";
  return "(reply type " + std::to_string(r.type) + ")";
}

Status bad_shape(const std::string& what) {
  return Status::error("read " + what, "the reply has an unexpected shape").as(ErrorKind::kBadData);
}

}  // namespace

std::vector<std::string> value_command(std::string_view type, std::string_view key) {
  const std::string k(key);
  if (type == "string") return {"GET", k};
  if (type == "list") return {"LRANGE", k, "0", "-1"};
  if (type == "set") return {"SMEMBERS", k};
  if (type == "zset") return {"ZRANGE", k, "0", "-1", "WITHSCORES"};
  if (type == "hash") return {"HGETALL", k};
  // COUNT 0: every entry and pending entry (the default shows 10).
  if (type == "stream") return {"XINFO", "STREAM", k, "FULL", "COUNT", "0"};
  return {"DUMP", k};  // a module type: compared as its payload
}

std::string canonical_score(std::string_view text) {
  double d = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (ec != std::errc() || end != text.data() + text.size()) {
    // "inf", "-inf" (from_chars takes them too, but not "+inf").
    if (text == "+inf" || text == "inf") return "inf";
    if (text == "-inf") return "-inf";
    return std::string(text);
  }
  char out[40];
  std::snprintf(out, sizeof out, "%.17g", d);
  return out;
}

void flatten_reply(const redisReply& reply, const std::string& path,
                   std::map<std::string, std::string>& out) {
  const std::string prefix = path.empty() ? "" : path + ".";
  if (looks_like_map(reply)) {
    for (size_t i = 0; i + 1 < reply.elements; i += 2) {
      const std::string name = leaf(*reply.element[i]);
      if (name == "active-time") continue;  // not kept before 7.2, nor by older RDBs
      flatten_reply(*reply.element[i + 1], prefix + name, out);
    }
  } else if (is_array(reply)) {
    if (reply.elements == 0) out[path] = "(empty)";
    for (size_t i = 0; i < reply.elements; ++i)
      flatten_reply(*reply.element[i], prefix + std::to_string(i), out);
  } else {
    out[path] = leaf(reply);
  }
}

Status take_value(const redisReply& reply, KeyState& s) {
  if (reply.type == REDIS_REPLY_ERROR) return bad_shape(s.type + " (" + leaf(reply) + ")");
  s.value.clear();
  if (s.type == "string" || (s.type != "list" && s.type != "set" && s.type != "zset" &&
                             s.type != "hash" && s.type != "stream")) {
    if (!is_text(reply)) return bad_shape(s.type);
    s.value[""] = leaf(reply);
    return {};
  }
  if (s.type == "stream") {
    if (!is_array(reply)) return bad_shape("stream");
    flatten_reply(reply, "", s.value);
    return {};
  }
  if (!is_array(reply)) return bad_shape(s.type);
  const bool pairs = s.type == "zset" || s.type == "hash";
  if (pairs && reply.elements % 2 != 0) return bad_shape(s.type);
  for (size_t i = 0; i < reply.elements; i += pairs ? 2 : 1) {
    const redisReply& e = *reply.element[i];
    if (!is_text(e)) return bad_shape(s.type);
    if (s.type == "list")
      s.value["[" + std::to_string(i) + "]"] = leaf(e);
    else if (s.type == "set")
      s.value[leaf(e)] = "";
    else if (s.type == "zset")
      s.value[leaf(e)] = canonical_score(leaf(*reply.element[i + 1]));
    else
      s.value[leaf(e)] = leaf(*reply.element[i + 1]);
  }
  return {};
}

std::vector<std::string> field_expiry_command(std::string_view key, const KeyState& s) {
  if (s.type != "hash" || s.value.empty()) return {};
  std::vector<std::string> argv = {"HPEXPIRETIME", std::string(key), "FIELDS",
                                   std::to_string(s.value.size())};
  for (const auto& [field, value] : s.value) argv.push_back(field);
  return argv;
}

Status take_field_expiry(const redisReply& reply, KeyState& s) {
  s.field_expiry.clear();
  if (!is_array(reply) || reply.elements != s.value.size()) return bad_shape("hash field TTLs");
  size_t i = 0;
  for (const auto& [field, value] : s.value) {
    const redisReply& e = *reply.element[i++];
    if (e.type != REDIS_REPLY_INTEGER) return bad_shape("hash field TTLs");
    if (e.integer >= 0) s.field_expiry[field] = e.integer;
  }
  return {};
}

}  // namespace rrs::verify
