// A writer that drives a master with every kind of write a replica must
// follow, round after round on its own thread, until stopped: strings,
// hashes, lists, sets, sorted sets, streams (consumer groups, XACK), TTLs,
// DEL/RENAME, several DBs, MULTI/EXEC, EVAL, FCALL, and a FLUSHDB every so
// often. Each round's keys depend on the round number, so the dataset keeps
// changing shape.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/redis_process.h"

namespace rrs::test {

class WriteLoad {
 public:
  // Loads the function library FCALL uses, then starts writing.
  explicit WriteLoad(RedisProcess& master);
  // Stops and joins (like stop()).
  ~WriteLoad();

  // Stops after the current round; returns the rounds written.
  uint64_t stop();
  uint64_t rounds() const { return rounds_.load(); }
  // Replies that were errors or a lost connection: empty when all went well.
  std::string errors() const;

 private:
  void run(RedisClient c);
  void round(RedisClient& c, uint64_t i);

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  mutable std::mutex mu_;
  std::string errors_;
  std::thread thread_;
};

}  // namespace rrs::test
