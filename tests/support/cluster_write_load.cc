#include "tests/support/cluster_write_load.h"

#include <map>

#include "proto/hash_slot.h"

namespace rrs::test {
namespace {

constexpr size_t kTags = 40;

}  // namespace

std::string ClusterWriter::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

void ClusterWriter::run() {
  std::map<std::string, RedisClient> clients;
  for (RedisProcess* m : cluster_.masters()) {
    auto c = m->connect();
    if (!c.ok()) return note("connect to " + m->address() + ": " + c.status().message());
    clients.emplace(m->address(), std::move(*c));
  }
  for (uint64_t i = 0; !stop_.load(); ++i) {
    const std::string tag = "{t" + std::to_string(i % kTags) + "}";
    RedisProcess* owner = cluster_.node_for_slot(hash_slot(tag));
    if (owner == nullptr) return note("no master for " + tag);
    round(clients.at(owner->address()), tag, i);
    rounds_.store(i + 1);
  }
}

void ClusterWriter::call(RedisClient& c, const std::vector<std::string>& argv) {
  Reply r = c.command(argv);
  if (!r) return note(argv[0] + ": connection lost");
  if (r->type == REDIS_REPLY_ERROR) note(argv[0] + ": " + std::string(r->str, r->len));
}

void ClusterWriter::round(RedisClient& c, const std::string& t, uint64_t i) {
  const std::string n = std::to_string(i);
  call(c, {"SET", t + "s:" + n, "v" + n});
  call(c, {"MSET", t + "a", "x" + n, t + "b", "y" + n});
  call(c, {"RPUSH", t + "l", "a" + n, "b" + n});
  call(c, {"RPOPLPUSH", t + "l", t + "l2"});
  call(c, {"SADD", t + "s1", "m" + n});
  call(c, {"SADD", t + "s2", "n" + std::to_string(i % 7)});
  call(c, {"SUNIONSTORE", t + "su", t + "s1", t + "s2"});
  call(c, {"ZADD", t + "z1", n, "m" + n});
  call(c, {"ZUNIONSTORE", t + "zu", "2", t + "z1", t + "s2"});
  call(c, {"MULTI"});
  call(c, {"INCR", t + "c"});
  call(c, {"HSET", t + "h", "f" + std::to_string(i % 13), n});
  call(c, {"EXEC"});
  call(c, {"EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])", "2",
           t + "e1", t + "e2", n});
  call(c, {"EXPIRE", t + "s:" + n, "100000"});
  if (i % 3 == 0) call(c, {"PERSIST", t + "s:" + n});
  if (i >= kTags * 2) call(c, {"DEL", t + "s:" + std::to_string(i - kTags * 2)});
}

void ClusterWriter::note(const std::string& e) {
  std::lock_guard lock(mu_);
  if (errors_.size() < 2000) errors_ += e + "\n";
}

}  // namespace rrs::test
