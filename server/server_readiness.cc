#include "server/server_readiness.h"

#include "common/metrics/readiness.h"

namespace rrs {

void ServerReadiness::serving(std::string what, bool held) {
  std::lock_guard lock(mu_);
  serving_ = std::move(what);
  held_ = held;
  blocked_.reset();
  publish();
}

void ServerReadiness::not_ready(std::string why) {
  std::lock_guard lock(mu_);
  blocked_ = std::move(why);
  publish();
}

void ServerReadiness::master_link(bool up, std::string why) {
  std::lock_guard lock(mu_);
  if (up == link_up_ && why == link_why_) return;
  link_up_ = up;
  link_why_ = std::move(why);
  publish();
}

void ServerReadiness::publish() {
  if (blocked_) return metrics::set_readiness(false, *blocked_);
  if (link_up_) return metrics::set_readiness(true, serving_);
  const std::string down = "the master is out of reach (" + link_why_ + ")";
  if (held_) return metrics::set_readiness(true, serving_ + "; " + down);
  metrics::set_readiness(false, down + ": no snapshot can be taken until it is back");
}

ServerReadiness& server_readiness() {
  static ServerReadiness instance;
  return instance;
}

}  // namespace rrs
