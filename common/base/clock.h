// Wall time for everything we report: CLOCK_MONOTONIC, never CPU time.
#pragma once

#include <sys/time.h>

#include <chrono>
#include <cstdint>

namespace rrs {

using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Unix time in ms, for absolute expiries and table creation stamps.
inline int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// For libevent and hiredis, which take their timeouts as a timeval.
inline timeval to_timeval(std::chrono::microseconds d) {
  return timeval{static_cast<time_t>(d.count() / 1000000),
                 static_cast<suseconds_t>(d.count() % 1000000)};
}

inline int64_t unix_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace rrs
