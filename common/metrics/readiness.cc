#include "common/metrics/readiness.h"

#include <mutex>

namespace rrs::metrics {
namespace {

std::mutex mu;
Readiness state;  // guarded by mu

}  // namespace

void set_readiness(bool ready, std::string why) {
  std::lock_guard lock(mu);
  state = {ready, std::move(why)};
}

Readiness readiness() {
  std::lock_guard lock(mu);
  return state;
}

}  // namespace rrs::metrics
