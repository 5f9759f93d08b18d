#include "client/verify/function_libraries.h"

#include <string_view>

#include "client/verify/reply_shape.h"

namespace rrs::verify {
namespace {

Status bad(const std::string& what) {
  return Status::error("read FUNCTION LIST", what).as(ErrorKind::kBadData);
}

}  // namespace

Result<Libraries> parse_libraries(const redisReply& reply) {
  if (!is_array(reply)) return bad("the reply is not an array");
  Libraries out;
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply& lib = *reply.element[i];
    if (!is_array(lib) || lib.elements % 2 != 0)
      return bad("a library is not a list of names and values");
    std::optional<std::string> name, code;
    for (size_t f = 0; f + 1 < lib.elements; f += 2) {
      const std::string_view field = text(*lib.element[f]);
      if (field == "library_name") name = std::string(text(*lib.element[f + 1]));
      if (field == "library_code") code = std::string(text(*lib.element[f + 1]));
    }
    if (!name || !code) return bad("a library without library_name or library_code");
    out[*name] = *code;
  }
  return out;
}

std::vector<std::pair<std::string, Difference>> compare_libraries(const Libraries& source,
                                                                  const Libraries& target) {
  std::vector<std::pair<std::string, Difference>> out;
  auto s = source.begin();
  auto t = target.begin();
  // Both maps are in name order: one merge walk.
  while (s != source.end() || t != target.end()) {
    if (t == target.end() || (s != source.end() && s->first < t->first)) {
      out.push_back({s->first, {"library-missing", s->second, "none"}});
      ++s;
    } else if (s == source.end() || t->first < s->first) {
      out.push_back({t->first, {"library-extra", "none", t->second}});
      ++t;
    } else {
      if (s->second != t->second) out.push_back({s->first, {"library-code", s->second, t->second}});
      ++s;
      ++t;
    }
  }
  return out;
}

Result<std::optional<Libraries>> read_libraries(RedisClient& client, std::string& why) {
  client.append({"FUNCTION", "LIST", "WITHCODE"});
  RRS_ASSIGN_OR_RETURN(ReplyPtr reply, client.get_reply());
  if (reply->type == REDIS_REPLY_ERROR) {
    why = std::string(reply->str, reply->len);
    return std::optional<Libraries>();
  }
  RRS_ASSIGN_OR_RETURN(Libraries libraries, parse_libraries(*reply));
  return std::optional<Libraries>(std::move(libraries));
}

}  // namespace rrs::verify
