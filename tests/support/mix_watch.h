// Watches the DBs a client of a target Redis sees while something swaps
// data in under it (rdma-client --atomic): their sizes read in one MULTI/EXEC
// (one consistent view), over and over on a connection and thread of its
// own, noting each view that is neither the old data nor the new.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/redis_process.h"

namespace rrs::test {

class MixWatch {
 public:
  // `old_sizes` and `new_sizes`: the sizes of `dbs` before and after.
  MixWatch(const RedisProcess& target, std::vector<int> dbs, std::vector<long long> old_sizes,
           std::vector<long long> new_sizes);
  ~MixWatch() { stop(); }
  MixWatch(const MixWatch&) = delete;
  MixWatch& operator=(const MixWatch&) = delete;

  void stop();
  // Empty when every view was the old data or the new.
  std::string problems() const;
  uint64_t old_views() const { return old_views_.load(); }
  uint64_t new_views() const { return new_views_.load(); }
  // Waits (a while) until it has seen the new data.
  bool wait_for_new() const;

 private:
  void run(RedisClient& c);
  void note(const std::string& what);

  std::vector<int> dbs_;
  std::vector<long long> old_, new_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> old_views_{0}, new_views_{0};
  mutable std::mutex mu_;
  std::string problems_;
  std::thread thread_;
};

}  // namespace rrs::test
