#include "client/cluster/command_keys.h"

#include <cctype>

namespace rrs {
namespace {

constexpr const char* kStep = "read the target's COMMAND INFO";

Status bad(const std::string& why) { return Status::error(kStep, why).as(ErrorKind::kBadData); }

bool is_text(const redisReply* r) {
  return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

std::string_view text(const redisReply* r) { return {r->str, r->len}; }

// An array of texts, as flags and tips are; false if any element is not one.
bool any_text_is(const redisReply* r, bool (*pred)(std::string_view), bool& found) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return false;
  for (size_t i = 0; i < r->elements; ++i) {
    if (!is_text(r->element[i])) return false;
    if (pred(text(r->element[i]))) found = true;
  }
  return true;
}

bool is_movable(std::string_view flag) { return lowercase(flag) == "movablekeys"; }
bool is_all_masters(std::string_view tip) {
  const std::string t = lowercase(tip);
  return t == "request_policy:all_shards" || t == "request_policy:all_nodes";
}

Status parse_entry(const redisReply* e, std::map<std::string, CommandSpec>& out);

Result<int> integer_at(const redisReply* e, size_t i) {
  const redisReply* r = e->element[i];
  if (r->type != REDIS_REPLY_INTEGER || r->integer < -1000000 || r->integer > 1000000)
    return bad("field " + std::to_string(i) + " of an entry is not a small integer");
  return static_cast<int>(r->integer);
}

Status parse_entry(const redisReply* e, std::map<std::string, CommandSpec>& out) {
  if (e->type == REDIS_REPLY_NIL) return {};  // a command this server does not know
  // name, arity, flags, first, last, step (Redis 6 ends after ACL
  // categories; 7 adds tips, key specs, subcommands).
  if (e->type != REDIS_REPLY_ARRAY || e->elements < 6 || !is_text(e->element[0]))
    return bad("an entry is not [name, arity, flags, first, last, step, ...]");
  CommandSpec spec;
  if (!any_text_is(e->element[2], is_movable, spec.movable)) return bad("flags are not texts");
  RRS_ASSIGN_OR_RETURN(spec.first, integer_at(e, 3));
  RRS_ASSIGN_OR_RETURN(spec.last, integer_at(e, 4));
  RRS_ASSIGN_OR_RETURN(spec.step, integer_at(e, 5));
  if (spec.first < 0 || spec.step < 0 || (spec.first > 0 && spec.step == 0))
    return bad("key positions " + std::to_string(spec.first) + "/" + std::to_string(spec.last) +
               "/" + std::to_string(spec.step) + " make no sense");
  if (e->elements > 7 && !any_text_is(e->element[7], is_all_masters, spec.all_masters))
    return bad("tips are not texts");
  if (e->elements > 8 && spec.movable) spec.key_specs = parse_key_specs(*e->element[8]);
  if (e->elements > 9) {
    const redisReply* subs = e->element[9];
    if (subs->type != REDIS_REPLY_ARRAY) return bad("subcommands are not an array");
    spec.has_subcommands = subs->elements > 0;
    for (size_t i = 0; i < subs->elements; ++i)
      RRS_RETURN_IF_ERROR(parse_entry(subs->element[i], out));
  }
  out[lowercase(text(e->element[0]))] = spec;
  return {};
}

}  // namespace

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<std::map<std::string, CommandSpec>> parse_command_info(const redisReply& reply) {
  if (reply.type != REDIS_REPLY_ARRAY) return bad("the reply is not an array");
  std::map<std::string, CommandSpec> out;
  for (size_t i = 0; i < reply.elements; ++i)
    RRS_RETURN_IF_ERROR(parse_entry(reply.element[i], out));
  return out;
}

Result<std::vector<size_t>> key_positions(const CommandSpec& spec, size_t argc) {
  std::vector<size_t> at;
  if (spec.first == 0) return at;
  const long long n = static_cast<long long>(argc);
  const long long last = spec.last < 0 ? n + spec.last : spec.last;
  if (spec.first >= n || last >= n)
    return Status::error("find a command's keys",
                         "the target places keys at arguments " + std::to_string(spec.first) +
                             ".." + std::to_string(spec.last) + " of a command with only " +
                             std::to_string(argc - 1))
        .as(ErrorKind::kBadData);
  for (long long i = spec.first; i <= last; i += spec.step) at.push_back(static_cast<size_t>(i));
  return at;
}

Result<const CommandSpec*> CommandKeys::spec(const std::string& name) {
  if (auto it = specs_.find(name); it != specs_.end()) return &it->second;
  RRS_ASSIGN_OR_RETURN(ReplyPtr reply, ask_({"COMMAND", "INFO", name}));
  RRS_ASSIGN_OR_RETURN(auto parsed, parse_command_info(*reply));
  specs_.merge(parsed);
  if (auto it = specs_.find(name); it != specs_.end()) return &it->second;
  return Status::error("find a command's keys",
                       "the target does not know the command '" + name.substr(0, 64) + "'")
      .as(ErrorKind::kRefused);
}

Result<std::vector<std::string>> CommandKeys::movable_keys(std::span<const std::string_view> args) {
  std::vector<std::string_view> argv = {"COMMAND", "GETKEYS"};
  argv.insert(argv.end(), args.begin(), args.end());
  getkeys_asked_++;
  auto reply = ask_(argv);
  if (!reply.ok()) {
    // An error reply: the target finds no keys in it (EVAL with numkeys 0).
    if (reply.status().kind() == ErrorKind::kFailed) return std::vector<std::string>{};
    return reply.status();
  }
  const redisReply* r = reply->get();
  if (r->type != REDIS_REPLY_ARRAY) return bad("COMMAND GETKEYS did not answer an array");
  std::vector<std::string> keys;
  for (size_t i = 0; i < r->elements; ++i) {
    if (!is_text(r->element[i])) return bad("COMMAND GETKEYS answered a key that is not a string");
    keys.emplace_back(text(r->element[i]));
  }
  return keys;
}

Result<CommandKeysOf> CommandKeys::keys_of(std::span<const std::string_view> args) {
  CommandKeysOf out;
  if (args.empty()) return out;
  std::string name = lowercase(args[0]);
  RRS_ASSIGN_OR_RETURN(const CommandSpec* s, spec(name));
  if (s->has_subcommands && args.size() >= 2) {
    auto sub = spec(name + "|" + lowercase(args[1]));
    if (sub.ok()) s = *sub;
  }
  out.all_masters = s->all_masters;
  if (s->movable) {
    const auto at = s->key_specs ? keys_by_specs(*s->key_specs, args) : std::nullopt;
    if (!at) {
      RRS_ASSIGN_OR_RETURN(out.keys, movable_keys(args));
      return out;
    }
    for (size_t i : *at) out.keys.emplace_back(args[i]);
    return out;
  }
  RRS_ASSIGN_OR_RETURN(std::vector<size_t> at, key_positions(*s, args.size()));
  for (size_t i : at) out.keys.emplace_back(args[i]);
  return out;
}

}  // namespace rrs
