#include "tests/support/redis_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "common/base/clock.h"

namespace rrs::test {
namespace {

std::string printable(const char* p, size_t n) {
  constexpr size_t kMax = 200;
  std::string s;
  for (size_t i = 0; i < n && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      s += hex;
    }
  }
  if (n > kMax) s += "...(" + std::to_string(n) + " bytes)";
  return s;
}

std::string command_name(const std::vector<std::string>& argv) {
  std::string s;
  for (size_t i = 0; i < argv.size() && i < 4; ++i)
    s += (i ? " " : "") + printable(argv[i].data(), argv[i].size());
  if (argv.size() > 4) s += " ...";
  return s;
}

}  // namespace

std::string to_string(const redisReply* r) {
  if (!r) return "(no reply)";
  switch (r->type) {
    case REDIS_REPLY_STRING: return "\"" + printable(r->str, r->len) + "\"";
    case REDIS_REPLY_STATUS: return printable(r->str, r->len);
    case REDIS_REPLY_ERROR: return "(error) " + printable(r->str, r->len);
    case REDIS_REPLY_INTEGER: return "(integer) " + std::to_string(r->integer);
    case REDIS_REPLY_NIL: return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (size_t i = 0; i < r->elements; ++i) s += (i ? ", " : "") + to_string(r->element[i]);
      return s + "]";
    }
  }
  return "(reply type " + std::to_string(r->type) + ")";
}

std::ostream& operator<<(std::ostream& os, const DbCounts& c) {
  return os << "keys=" << c.keys << ",expires=" << c.expires;
}

std::ostream& operator<<(std::ostream& os, const Keyspace& k) {
  os << "{";
  for (const auto& [db, c] : k) os << " db" << db << ":" << c;
  return os << " }";
}

uint64_t total_keys(const Keyspace& k) {
  uint64_t n = 0;
  for (const auto& [db, c] : k) n += c.keys;
  return n;
}

std::string text(const Reply& r) {
  if (!r || !r->str) return "";
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: return std::string(r->str, r->len);
  }
  return "";
}

std::string resp_command(const std::vector<std::string>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const auto& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

Result<RedisClient> RedisClient::connect(uint16_t port, const std::string& password,
                                         std::chrono::milliseconds timeout,
                                         std::shared_ptr<const TlsContext> tls) {
  RedisCredentials creds;
  creds.origin = "the test";
  creds.tls = std::move(tls);
  std::istringstream words(password);
  std::vector<std::string> w;
  for (std::string word; words >> word;) w.push_back(word);
  if (w.size() == 1) {
    creds.password = w[0];
  } else if (w.size() >= 2) {
    creds.user = w[0];
    creds.password = w[1];
  }
  auto c = rrs::RedisClient::connect(Endpoint{"127.0.0.1", port}, creds, timeout);
  if (!c.ok()) return c.status();
  return RedisClient(std::move(*c));
}

void RedisClient::set_timeout(std::chrono::milliseconds timeout) { client_.set_timeout(timeout); }

Reply RedisClient::command(const std::vector<std::string>& argv) {
  std::vector<std::string_view> views(argv.begin(), argv.end());
  client_.append(views);
  auto r = client_.get_reply();
  if (!r.ok()) {
    last_error_ = r.status().message();
    return nullptr;
  }
  return std::move(*r);
}

Reply RedisClient::run(const std::vector<std::string>& argv) {
  Reply r = command(argv);
  if (!r)
    ADD_FAILURE() << command_name(argv) << ": " << last_error_;
  else if (r->type == REDIS_REPLY_ERROR)
    ADD_FAILURE() << command_name(argv) << ": " << to_string(r);
  return r;
}

void RedisClient::select(int db) { run({"SELECT", std::to_string(db)}); }

std::string RedisClient::digest() {
  Reply r = run({"DEBUG", "DIGEST"});
  if (!r || (r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_STRING)) return "";
  return std::string(r->str, r->len);
}

Keyspace RedisClient::keyspace() {
  Keyspace ks;
  Reply r = run({"INFO", "keyspace"});
  if (!r || r->type != REDIS_REPLY_STRING) return ks;
  for (const KeyspaceDb& db : parse_keyspace(text(r)))
    ks[static_cast<int>(db.db)] = DbCounts{db.keys, db.expires};
  return ks;
}

std::string RedisClient::info_field(const std::string& section, const std::string& field) {
  Reply r = command({"INFO", section});
  if (!r || r->type != REDIS_REPLY_STRING) return "";
  return rrs::info_field(text(r), field);
}

void RedisClient::for_each_key(
    const std::function<void(const std::string& key, const std::string& name)>& visit) {
  for (const auto& [db, counts] : keyspace()) {
    select(db);
    Reply keys = run({"KEYS", "*"});
    if (!keys || keys->type != REDIS_REPLY_ARRAY) continue;
    for (size_t i = 0; i < keys->elements; ++i) {
      const std::string key(keys->element[i]->str, keys->element[i]->len);
      visit(key, "db" + std::to_string(db) + ":" + printable(key.data(), key.size()));
    }
  }
  select(0);
}

std::map<std::string, std::string> RedisClient::state_outside_digest() {
  std::map<std::string, std::string> state;
  for_each_key([&](const std::string& key, const std::string& name) {
    // A key may go (deleted, expired) between KEYS and these while the
    // data set still changes: what is read then is different, not a
    // failure, and a caller that waits for convergence reads again.
    Reply at = command({"PEXPIRETIME", key});
    if (at && at->type == REDIS_REPLY_INTEGER && at->integer != -1)
      state[name + " pexpiretime"] = std::to_string(at->integer);
    Reply type = command({"TYPE", key});
    if (type && type->str && std::string(type->str, type->len) == "stream")
      state[name + " xinfo"] = to_string(command({"XINFO", "STREAM", key, "FULL"}));
  });
  for (const auto& [name, library] : functions()) state["function library " + name] = library;
  return state;
}

namespace {

// A reply rendered like to_string(), but a flat map (an even-length array of
// string keys) drops the pairs whose key is in `skip`.
std::string render_without(const redisReply* r, const std::vector<std::string>& skip) {
  if (!r || r->type != REDIS_REPLY_ARRAY) return to_string(r);
  bool map = r->elements % 2 == 0 && r->elements > 0;
  for (size_t i = 0; map && i < r->elements; i += 2)
    map = r->element[i]->type == REDIS_REPLY_STRING || r->element[i]->type == REDIS_REPLY_STATUS;
  std::string out = "[";
  for (size_t i = 0; i < r->elements; ++i) {
    if (map && i % 2 == 0 &&
        std::find(skip.begin(), skip.end(), std::string(r->element[i]->str, r->element[i]->len)) !=
            skip.end()) {
      ++i;
      continue;
    }
    out += (out.size() > 1 ? " " : "") + render_without(r->element[i], skip);
  }
  return out + "]";
}

// The strings of an array reply, sorted: a set's members, a hash's
// field/value pairs joined.
std::vector<std::string> strings_of(const redisReply* r) {
  std::vector<std::string> out;
  for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i)
    out.push_back(to_string(r->element[i]));
  return out;
}

}  // namespace

std::string RedisClient::hash_state(const std::string& key, const std::string& name,
                                    std::map<std::string, std::string>& state) {
  Reply all = command({"HGETALL", key});
  std::vector<std::string> fields, pairs;
  for (size_t f = 0; all && all->type == REDIS_REPLY_ARRAY && f + 1 < all->elements; f += 2) {
    fields.emplace_back(all->element[f]->str, all->element[f]->len);
    pairs.push_back(to_string(all->element[f]) + "=" + to_string(all->element[f + 1]));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string value;
  for (const auto& p : pairs) value += p + "\n";
  if (fields.empty()) return value;
  std::vector<std::string> ask = {"HPEXPIRETIME", key, "FIELDS", std::to_string(fields.size())};
  ask.insert(ask.end(), fields.begin(), fields.end());
  Reply ttls = command(ask);
  if (!ttls || ttls->type != REDIS_REPLY_ARRAY) return value;  // no field TTLs on this server
  for (size_t f = 0; f < ttls->elements && f < fields.size(); ++f)
    if (ttls->element[f]->type == REDIS_REPLY_INTEGER && ttls->element[f]->integer >= 0)
      state[name + " field expiry " + fields[f] + "@" + std::to_string(ttls->element[f]->integer)];
  return value;
}

std::map<std::string, std::string> RedisClient::logical_state() {
  std::map<std::string, std::string> state;
  for_each_key([&](const std::string& key, const std::string& name) {
    const std::string type = text(command({"TYPE", key}));
    std::string value;
    if (type == "string") {
      value = to_string(command({"GET", key}));
    } else if (type == "list") {
      value = to_string(command({"LRANGE", key, "0", "-1"}));
    } else if (type == "set") {
      auto members = strings_of(command({"SMEMBERS", key}).get());
      std::sort(members.begin(), members.end());
      for (const auto& m : members) value += m + "\n";
    } else if (type == "zset") {
      value = to_string(command({"ZRANGE", key, "0", "-1", "WITHSCORES"}));
    } else if (type == "hash") {
      value = hash_state(key, name, state);
    } else if (type == "stream") {
      value = render_without(command({"XINFO", "STREAM", key, "FULL"}).get(), {"active-time"});
    } else {
      value = to_string(command({"DUMP", key}));  // a module type: as it is
    }
    state[name] = type + " " + value;
    Reply at = command({"PEXPIRETIME", key});
    if (at && at->type == REDIS_REPLY_INTEGER && at->integer != -1)
      state[name + " pexpiretime"] = std::to_string(at->integer);
  });
  for (const auto& [name, library] : functions()) state["function library " + name] = library;
  return state;
}

std::map<std::string, std::string> RedisClient::functions() {
  std::map<std::string, std::string> libraries;
  Reply list = command({"FUNCTION", "LIST", "WITHCODE"});
  if (!list || list->type != REDIS_REPLY_ARRAY) return libraries;  // before 7.0: none
  auto text = [](const redisReply* r) {
    return r && r->str ? std::string(r->str, r->len) : to_string(r);
  };
  for (size_t i = 0; i < list->elements; ++i) {
    // Each library is a flat map: library_name, engine, functions, library_code.
    const redisReply* lib = list->element[i];
    std::string name, rendered;
    for (size_t k = 0; lib->type == REDIS_REPLY_ARRAY && k + 1 < lib->elements; k += 2) {
      std::string field = text(lib->element[k]);
      const redisReply* value = lib->element[k + 1];
      if (field == "library_name") {
        name = text(value);
      } else if (field == "functions" && value->type == REDIS_REPLY_ARRAY) {
        std::vector<std::string> fns;
        for (size_t f = 0; f < value->elements; ++f) fns.push_back(to_string(value->element[f]));
        std::sort(fns.begin(), fns.end());
        rendered += " functions=";
        for (const std::string& f : fns) rendered += f;
      } else {
        rendered += " " + field + "=" + text(value);  // library_code in full, not abridged
      }
    }
    libraries[name] = rendered;
  }
  return libraries;
}

}  // namespace rrs::test
