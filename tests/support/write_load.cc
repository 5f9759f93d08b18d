#include "tests/support/write_load.h"

#include <gtest/gtest.h>

namespace rrs::test {
namespace {

const char* kLibrary = "#!lua name=followlib\n"
                       "redis.register_function('bump', function(keys, args) "
                       "redis.call('HINCRBY', keys[1], 'calls', 1) "
                       "return redis.call('INCRBY', keys[2], args[1]) end)";

}  // namespace

WriteLoad::WriteLoad(RedisProcess& master) {
  auto c = master.connect();
  if (!c.ok()) {
    errors_ = "connect: " + c.status().message();
    return;
  }
  Reply r = c->command({"FUNCTION", "LOAD", "REPLACE", kLibrary});
  if (!r || r->type == REDIS_REPLY_ERROR) errors_ = "FUNCTION LOAD: " + to_string(r);
  thread_ = std::thread([this, c = std::move(*c)]() mutable { run(std::move(c)); });
}

WriteLoad::~WriteLoad() { stop(); }

uint64_t WriteLoad::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return rounds_.load();
}

std::string WriteLoad::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

void WriteLoad::run(RedisClient c) {
  for (uint64_t i = 0; !stop_.load(); ++i) {
    round(c, i);
    rounds_ = i + 1;
  }
}

void WriteLoad::round(RedisClient& c, uint64_t i) {
  const std::string n = std::to_string(i);
  const std::string k = std::to_string(i % 50);  // keys are reused: updates, not only inserts
  auto w = [&](std::vector<std::string> argv) {
    Reply r = c.command(argv);
    if (r && r->type != REDIS_REPLY_ERROR) return;
    std::lock_guard lock(mu_);
    if (errors_.size() < 2000) errors_ += argv[0] + " " + argv[1] + ": " + to_string(r) + "\n";
  };
  w({"SELECT", std::to_string(i % 3)});
  // Strings.
  w({"SET", "s:" + k, "v" + n});
  w({"APPEND", "s:" + k, std::string("\r\n\0x", 4)});
  w({"INCR", "ctr:" + k});
  w({"INCRBYFLOAT", "f:" + k, "0.5"});
  w({"SET", "ttl:" + k, n, "EX", "1000"});
  w({"SETRANGE", "s:" + k, "2", "zz"});
  // Hashes, lists, sets, sorted sets.
  w({"HSET", "h:" + k, "f" + n, n, "g", "x"});
  w({"HINCRBY", "h:" + k, "count", "1"});
  if (i % 4 == 0) w({"HDEL", "h:" + k, "g"});
  w({"RPUSH", "l:" + k, "a" + n, "b" + n});
  w({"LPUSH", "l:" + k, "c" + n});
  if (i % 3 == 0) w({"LPOP", "l:" + k});
  w({"LTRIM", "l:" + k, "0", "99"});
  w({"LMOVE", "l:" + k, "l2:" + k, "LEFT", "RIGHT"});
  w({"SADD", "set:" + k, "m" + n, "m" + std::to_string(i / 2)});
  if (i % 5 == 0) w({"SPOP", "set:" + k});
  w({"SREM", "set:" + k, "m" + std::to_string(i / 3)});
  w({"ZADD", "z:" + k, n, "m" + n});
  w({"ZINCRBY", "z:" + k, "2.5", "m" + std::to_string(i / 2)});
  if (i % 7 == 0) w({"ZPOPMIN", "z:" + k});
  w({"ZUNIONSTORE", "zu:" + k, "2", "z:" + k, "z:" + std::to_string((i + 1) % 50)});
  // Streams: entries, a consumer group, reads, acks, trims.
  w({"XADD", "x:" + k, "*", "n", n});
  c.command({"XGROUP", "CREATE", "x:" + k, "g", "0", "MKSTREAM"});  // BUSYGROUP is fine
  w({"XREADGROUP", "GROUP", "g", "c" + std::to_string(i % 2), "COUNT", "2", "STREAMS", "x:" + k,
     ">"});
  Reply pending = c.command({"XPENDING", "x:" + k, "g", "-", "+", "1"});
  if (pending && pending->type == REDIS_REPLY_ARRAY && pending->elements > 0 &&
      pending->element[0]->type == REDIS_REPLY_ARRAY)
    w({"XACK", "x:" + k, "g",
       std::string(pending->element[0]->element[0]->str, pending->element[0]->element[0]->len)});
  if (i % 10 == 0) w({"XTRIM", "x:" + k, "MAXLEN", "20"});
  // Expiry and key space operations.
  w({"EXPIRE", "s:" + k, "5000"});
  if (i % 2 == 0) w({"PERSIST", "s:" + k});
  w({"SET", "tmp:" + n, "gone soon"});
  w({"RENAME", "tmp:" + n, "renamed:" + k});
  if (i % 3 == 0) w({"DEL", "renamed:" + k, "l2:" + k});
  // A transaction, a script, a function.
  w({"MULTI"});
  w({"INCR", "tx:a"});
  w({"HSET", "tx:h", "last", n});
  w({"SELECT", "5"});
  w({"SET", "tx:in5", n});
  w({"EXEC"});
  w({"SELECT", std::to_string(i % 3)});
  w({"EVAL", "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('LPUSH', KEYS[2], ARGV[1])",
     "2", "ev:" + k, "evl:" + k, n});
  w({"FCALL", "bump", "2", "fh:" + k, "fc:" + k, "3"});
  // Now and then wipe a DB, so the replica must drop everything in it too.
  if (i % 97 == 96) w({"FLUSHDB"});
}

}  // namespace rrs::test
