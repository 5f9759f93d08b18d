// Rate limit for log lines a peer can cause at will (a refused handshake per
// connection): at most `burst` lines per category per interval, then one
// summary line for the rest, so a peer without the secret cannot fill the
// disk. Categories are short fixed strings the caller picks ("handshake
// refused"); each has its own budget.
//
// Not thread-safe and clock-free: the caller passes the time (CLOCK_MONOTONIC
// in log.cc, any time point in tests) and holds a lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/clock.h"
#include "common/base/log_line.h"

namespace rrs::log {

class LogLimiter {
 public:
  struct Budget {
    size_t burst = 10;
    std::chrono::milliseconds interval{10000};
  };
  // The line that stands for the lines not written:
  // "... and 3981 more like it in the last 10 s (handshake refused)".
  struct Summary {
    Level level;
    std::string msg;
  };
  struct Verdict {
    std::optional<Summary> summary;  // for the category's interval just ended: write it first
    bool write = false;              // whether to write this line
  };

  explicit LogLimiter(Budget budget) : budget_(budget) {}

  // A line of `category` at `now`.
  Verdict admit(std::string_view category, Level level, Clock::time_point now);

  // The summaries of every interval that has ended by `now` with lines held
  // back; those categories start afresh.
  std::vector<Summary> take_due(Clock::time_point now);
  // Every summary now, ended or not (before exiting); all categories start afresh.
  std::vector<Summary> take_all();

  // When the earliest interval with lines held back ends (for a timer);
  // nullopt if there are none.
  std::optional<Clock::time_point> next_due() const;

 private:
  struct Window {
    Clock::time_point start;
    size_t written = 0;
    size_t held = 0;
    Level level = Level::kInfo;  // of the lines held back
  };
  Summary summarize(const std::string& category, const Window& w) const;

  Budget budget_;
  std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace rrs::log
