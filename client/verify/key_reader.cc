#include "client/verify/key_reader.h"

#include <string_view>

namespace rrs::verify {
namespace {

void append_argv(RedisClient& c, const std::vector<std::string>& argv) {
  std::vector<std::string_view> views(argv.begin(), argv.end());
  c.append(views);
}

}  // namespace

Result<KeyReader> KeyReader::open(RedisClient client, std::string side) {
  auto info = client.command({"COMMAND", "INFO", "HPEXPIRETIME"});
  if (!info.ok()) return info.status().wrap("ask the " + side + " for its commands");
  const redisReply& r = **info;
  const bool has = r.type == REDIS_REPLY_ARRAY && r.elements == 1 &&
                   r.element[0]->type == REDIS_REPLY_ARRAY;
  return KeyReader(std::move(client), std::move(side), has);
}

Status KeyReader::select(uint32_t db) {
  auto r = client_.command({"SELECT", std::to_string(db)});
  if (!r.ok()) return r.status().wrap("select DB " + std::to_string(db) + " on the " + side_);
  return {};
}

Result<ReplyPtr> KeyReader::reply(const char* step) {
  auto r = client_.get_reply();
  if (!r.ok()) return r.status().wrap(std::string(step) + " on the " + side_);
  return r;
}

void KeyReader::append_types(std::span<const std::string> keys) {
  for (const std::string& k : keys) {
    client_.append({"TYPE", k});
    client_.append({"PTTL", k});
  }
}

Status KeyReader::take_types(std::vector<KeyState>& states) {
  for (KeyState& s : states) {
    RRS_ASSIGN_OR_RETURN(ReplyPtr type, reply("TYPE"));
    RRS_ASSIGN_OR_RETURN(ReplyPtr pttl, reply("PTTL"));
    if (type->type != REDIS_REPLY_STATUS && type->type != REDIS_REPLY_STRING)
      return Status::error("TYPE on the " + side_, "not a type name").as(ErrorKind::kBadData);
    if (pttl->type != REDIS_REPLY_INTEGER)
      return Status::error("PTTL on the " + side_, "not an integer").as(ErrorKind::kBadData);
    s = KeyState{};
    s.type.assign(type->str, type->len);
    s.pttl = pttl->integer;
  }
  return {};
}

void KeyReader::append_values(std::span<const std::string> keys,
                              const std::vector<KeyState>& states) {
  for (size_t i = 0; i < keys.size(); ++i)
    if (states[i].exists()) append_argv(client_, value_command(states[i].type, keys[i]));
}

Status KeyReader::take_values(std::vector<KeyState>& states) {
  for (KeyState& s : states) {
    if (!s.exists()) continue;
    RRS_ASSIGN_OR_RETURN(ReplyPtr r, reply("read a value"));
    // Gone since TYPE (expired, deleted by a writer): as if never seen.
    if (r->type == REDIS_REPLY_NIL) {
      s = KeyState{};
      continue;
    }
    // WRONGTYPE: written as another type since TYPE; a difference that the
    // second look at differing keys reads again.
    if (r->type == REDIS_REPLY_ERROR && std::string_view(r->str, r->len).starts_with("WRONGTYPE")) {
      s.type = "(changed during the read)";
      s.value.clear();
      continue;
    }
    RRS_RETURN_IF_ERROR(take_value(*r, s).wrap("on the " + side_));
  }
  return {};
}

void KeyReader::append_field_ttls(std::span<const std::string> keys,
                                  const std::vector<KeyState>& states) {
  if (!field_ttls_) return;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto argv = field_expiry_command(keys[i], states[i]);
    if (!argv.empty()) append_argv(client_, argv);
  }
}

Status KeyReader::take_field_ttls(std::vector<KeyState>& states) {
  if (!field_ttls_) return {};
  for (KeyState& s : states) {
    if (s.type != "hash" || s.value.empty()) continue;
    RRS_ASSIGN_OR_RETURN(ReplyPtr r, reply("HPEXPIRETIME"));
    RRS_RETURN_IF_ERROR(take_field_expiry(*r, s).wrap("on the " + side_));
  }
  return {};
}

Status read_both(KeyReader& source, KeyReader& target, std::span<const std::string> keys,
                 std::vector<KeyState>& source_states, std::vector<KeyState>& target_states) {
  source_states.assign(keys.size(), {});
  target_states.assign(keys.size(), {});
  source.append_types(keys);
  target.append_types(keys);
  RRS_RETURN_IF_ERROR(source.client().send_appended());
  RRS_RETURN_IF_ERROR(target.client().send_appended());
  RRS_RETURN_IF_ERROR(source.take_types(source_states));
  RRS_RETURN_IF_ERROR(target.take_types(target_states));
  source.append_values(keys, source_states);
  target.append_values(keys, target_states);
  RRS_RETURN_IF_ERROR(source.client().send_appended());
  RRS_RETURN_IF_ERROR(target.client().send_appended());
  RRS_RETURN_IF_ERROR(source.take_values(source_states));
  RRS_RETURN_IF_ERROR(target.take_values(target_states));
  source.append_field_ttls(keys, source_states);
  target.append_field_ttls(keys, target_states);
  RRS_RETURN_IF_ERROR(source.client().send_appended());
  RRS_RETURN_IF_ERROR(target.client().send_appended());
  RRS_RETURN_IF_ERROR(source.take_field_ttls(source_states));
  return target.take_field_ttls(target_states);
}

}  // namespace rrs::verify
