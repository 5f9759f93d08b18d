#include "tests/support/mix_watch.h"

#include <chrono>

namespace rrs::test {

using namespace std::chrono_literals;

MixWatch::MixWatch(const RedisProcess& target, std::vector<int> dbs,
                   std::vector<long long> old_sizes, std::vector<long long> new_sizes)
    : dbs_(std::move(dbs)), old_(std::move(old_sizes)), new_(std::move(new_sizes)) {
  auto c = target.connect();
  if (!c.ok()) {
    problems_ = "connect: " + c.status().message();
    return;
  }
  thread_ = std::thread([this, c = std::move(*c)]() mutable { run(c); });
}

void MixWatch::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string MixWatch::problems() const {
  std::lock_guard lock(mu_);
  return problems_;
}

bool MixWatch::wait_for_new() const {
  for (int i = 0; i < 10000 && new_views_.load() == 0 && !stop_.load(); ++i)
    std::this_thread::sleep_for(1ms);
  return new_views_.load() > 0;
}

void MixWatch::run(RedisClient& c) {
  while (!stop_.load()) {
    c.command({"MULTI"});
    for (int db : dbs_) {
      c.command({"SELECT", std::to_string(db)});
      c.command({"DBSIZE"});
    }
    Reply r = c.command({"EXEC"});
    std::vector<long long> sizes;
    for (size_t i = 1; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i += 2)
      sizes.push_back(r->element[i]->integer);
    if (sizes.size() != dbs_.size()) {
      note("EXEC: " + to_string(r));
      return;
    }
    if (sizes == old_) {
      old_views_++;
    } else if (sizes == new_) {
      new_views_++;
    } else {
      std::string v;
      for (size_t i = 0; i < dbs_.size(); ++i)
        v += " db" + std::to_string(dbs_[i]) + "=" + std::to_string(sizes[i]);
      note("a mix of old and new data:" + v);
    }
    std::this_thread::sleep_for(500us);
  }
}

void MixWatch::note(const std::string& what) {
  std::lock_guard lock(mu_);
  if (problems_.size() < 2000) problems_ += what + "\n";
}

}  // namespace rrs::test
