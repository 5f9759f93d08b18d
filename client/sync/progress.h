// Progress on stderr while a sync runs: a redrawn bar on a terminal, a line
// every few seconds otherwise (logs, CI). Call update() often; it decides.
// A table still being written has no total yet: "N keys so far" until
// set_totals() says how many there are.
#pragma once

#include <cstdint>
#include <optional>

#include "common/base/clock.h"

namespace rrs {

class Progress {
 public:
  struct Totals {
    uint64_t records = 0;
    uint64_t bytes = 0;
  };
  // `totals`: the table's, or nullopt while it is being written.
  Progress(std::optional<Totals> totals, bool quiet);
  void set_totals(Totals totals) { totals_ = totals; }
  bool has_totals() const { return totals_.has_value(); }
  void update(uint64_t records_done, uint64_t bytes_read, bool final = false);

 private:
  void draw(uint64_t records_done, double mb, double elapsed, bool final) const;
  void draw_so_far(uint64_t records_done, double mb, double elapsed, bool final) const;

  std::optional<Totals> totals_;
  bool quiet_, tty_;
  Clock::time_point start_ = Clock::now(), last_ = start_;
};

}  // namespace rrs
