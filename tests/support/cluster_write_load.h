// A writer for a cluster's follow tests: round after round on its own
// thread, each command sent to the master serving its keys' slot (as a
// cluster client would; every command's keys share a hash tag, over 40 tags):
// SET, MSET, RPUSH/RPOPLPUSH, SADD/SUNIONSTORE, ZADD/ZUNIONSTORE (movable
// keys), MULTI/EXEC, EVAL with keys, EXPIRE, PERSIST and DEL.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/redis_cluster.h"

namespace rrs::test {

class ClusterWriter {
 public:
  explicit ClusterWriter(RedisCluster& cluster) : cluster_(cluster) {
    thread_ = std::thread([this] { run(); });
  }
  ~ClusterWriter() { stop(); }

  uint64_t stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return rounds_.load();
  }
  uint64_t rounds() const { return rounds_.load(); }
  // Replies that were errors or a lost connection: empty when all went well.
  std::string errors() const;

 private:
  void run();
  void call(RedisClient& c, const std::vector<std::string>& argv);
  // Round `i` on hash tag `t`.
  void round(RedisClient& c, const std::string& t, uint64_t i);
  void note(const std::string& e);

  RedisCluster& cluster_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  mutable std::mutex mu_;
  std::string errors_;
  std::thread thread_;
};

}  // namespace rrs::test
