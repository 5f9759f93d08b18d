// Progress on stderr while a sync runs: a redrawn bar on a terminal, a line
// every few seconds otherwise (logs, CI). Call update() often; it decides.
#pragma once

#include <cstdint>

#include "common/base/clock.h"

namespace rrs {

class Progress {
 public:
  Progress(uint64_t total_records, uint64_t total_bytes, bool quiet);
  void update(uint64_t records_done, uint64_t bytes_read, bool final = false);

 private:
  uint64_t total_records_, total_bytes_;
  bool quiet_, tty_;
  Clock::time_point start_ = Clock::now(), last_ = start_;
};

}  // namespace rrs
