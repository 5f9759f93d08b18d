#include "tests/support/redis_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
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

Result<RedisClient> RedisClient::connect(uint16_t port, const std::string& password,
                                         std::chrono::milliseconds timeout) {
  std::string where = "connect to 127.0.0.1:" + std::to_string(port);
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, to_timeval(timeout));
  if (!c) return Status::error(where, "out of memory");
  RedisClient client(c);
  if (c->err) return Status::error(where, c->errstr);
  if (redisSetTimeout(c, to_timeval(timeout)) != REDIS_OK)
    return Status::error(where, "cannot set the I/O timeout");
  if (!password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    std::istringstream words(password);
    for (std::string w; words >> w;) auth.push_back(w);
    Reply r = client.command(auth);
    if (!r || r->type == REDIS_REPLY_ERROR)
      return Status::error(where, "AUTH: " + (r ? to_string(r) : client.last_error()));
  }
  return client;
}

bool RedisClient::set_timeout(std::chrono::milliseconds timeout) {
  return redisSetTimeout(ctx_.get(), to_timeval(timeout)) == REDIS_OK;
}

Reply RedisClient::command(const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), ptrs.data(), lens.data()));
  if (!r) last_error_ = ctx_->errstr[0] ? ctx_->errstr : "connection lost";
  return Reply(r);
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
  // Lines look like "db0:keys=12,expires=3,avg_ttl=0".
  std::istringstream in(std::string(r->str, r->len));
  for (std::string line; std::getline(in, line);) {
    int db = 0;
    unsigned long long keys = 0, expires = 0;
    if (std::sscanf(line.c_str(), "db%d:keys=%llu,expires=%llu", &db, &keys, &expires) == 3)
      ks[db] = DbCounts{keys, expires};
  }
  return ks;
}

std::map<std::string, std::string> RedisClient::state_outside_digest() {
  std::map<std::string, std::string> state;
  for (const auto& [db, counts] : keyspace()) {
    select(db);
    Reply keys = run({"KEYS", "*"});
    if (!keys || keys->type != REDIS_REPLY_ARRAY) continue;
    for (size_t i = 0; i < keys->elements; ++i) {
      std::string key(keys->element[i]->str, keys->element[i]->len);
      std::string name = "db" + std::to_string(db) + ":" + printable(key.data(), key.size());
      // A key may go (deleted, expired) between KEYS and these while the
      // data set still changes: what is read then is different, not a
      // failure, and a caller that waits for convergence reads again.
      Reply at = command({"PEXPIRETIME", key});
      if (at && at->type == REDIS_REPLY_INTEGER && at->integer != -1)
        state[name + " pexpiretime"] = std::to_string(at->integer);
      Reply type = command({"TYPE", key});
      if (type && type->str && std::string(type->str, type->len) == "stream")
        state[name + " xinfo"] = to_string(command({"XINFO", "STREAM", key, "FULL"}));
    }
  }
  select(0);
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
