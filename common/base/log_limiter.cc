#include "common/base/log_limiter.h"

namespace rrs::log {
namespace {

std::string describe(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

}  // namespace

LogLimiter::Summary LogLimiter::summarize(const std::string& category, const Window& w) const {
  return {w.level, "... and " + std::to_string(w.held) + " more like it in the last " +
                       describe(budget_.interval) + " (" + category + ")"};
}

LogLimiter::Verdict LogLimiter::admit(std::string_view category, Level level,
                                      Clock::time_point now) {
  Verdict v;
  auto it = windows_.find(category);
  if (it == windows_.end()) {
    it = windows_.emplace(std::string(category), Window{now}).first;
  } else if (now - it->second.start >= budget_.interval) {
    if (it->second.held) v.summary = summarize(it->first, it->second);
    it->second = Window{now};
  }
  Window& w = it->second;
  if (w.written < budget_.burst) {
    ++w.written;
    v.write = true;
  } else {
    ++w.held;
    w.level = level;
  }
  return v;
}

std::vector<LogLimiter::Summary> LogLimiter::take_due(Clock::time_point now) {
  std::vector<Summary> due;
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (now - it->second.start < budget_.interval) {
      ++it;
      continue;
    }
    if (it->second.held) due.push_back(summarize(it->first, it->second));
    it = windows_.erase(it);
  }
  return due;
}

std::vector<LogLimiter::Summary> LogLimiter::take_all() {
  std::vector<Summary> all;
  for (const auto& [category, w] : windows_)
    if (w.held) all.push_back(summarize(category, w));
  windows_.clear();
  return all;
}

std::optional<Clock::time_point> LogLimiter::next_due() const {
  std::optional<Clock::time_point> first;
  for (const auto& [category, w] : windows_) {
    if (!w.held) continue;
    const auto end = w.start + budget_.interval;
    if (!first || end < *first) first = end;
  }
  return first;
}

}  // namespace rrs::log
