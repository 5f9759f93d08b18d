#include "client/sync/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/base/log.h"

namespace rrs {
namespace {

using ull = unsigned long long;

}  // namespace

Progress::Progress(std::optional<Totals> totals, bool quiet)
    : totals_(totals),
      quiet_(quiet),
      // The redrawn bar is for a person; JSON lines are for a log shipper.
      tty_(isatty(STDERR_FILENO) == 1 && log::format() == log::Format::kText) {}

void Progress::update(uint64_t records_done, uint64_t bytes_read, bool final) {
  if (quiet_) return;
  const double since = std::chrono::duration<double>(Clock::now() - last_).count();
  if (!final && since < (tty_ ? 0.2 : 5.0)) return;
  last_ = Clock::now();
  const double elapsed = seconds_since(start_);
  const double mb = static_cast<double>(bytes_read) / 1e6;
  if (totals_)
    draw(records_done, mb, elapsed, final);
  else
    draw_so_far(records_done, mb, elapsed, final);
}

void Progress::draw(uint64_t records_done, double mb, double elapsed, bool final) const {
  const double pct = totals_->records ? 100.0 * static_cast<double>(records_done) /
                                            static_cast<double>(totals_->records)
                                      : 100.0;
  const double total_mb = static_cast<double>(totals_->bytes) / 1e6;
  if (tty_) {
    const int width = 30, filled = static_cast<int>(pct / 100.0 * width);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %llu/%llu keys  %.0f/%.0f MB  %.1f s\033[K%s",
                 filled, "##############################", width - filled, "", pct,
                 ull(records_done), ull(totals_->records), mb, total_mb, elapsed,
                 final ? "\n" : "");
    return;
  }
  char line[160];
  std::snprintf(line, sizeof line, "progress %.1f%%: %llu/%llu keys, %.0f/%.0f MB read, %.1f s",
                pct, ull(records_done), ull(totals_->records), mb, total_mb, elapsed);
  log::info(line);
}

// The table is still being written: no bar, only what came so far.
void Progress::draw_so_far(uint64_t records_done, double mb, double elapsed, bool final) const {
  if (tty_) {
    std::fprintf(stderr, "\r%llu keys so far  %.0f MB  %.1f s (the table is being written)\033[K%s",
                 ull(records_done), mb, elapsed, final ? "\n" : "");
    return;
  }
  char line[160];
  std::snprintf(line, sizeof line, "progress: %llu keys so far, %.0f MB read, %.1f s",
                ull(records_done), mb, elapsed);
  log::info(line);
}

}  // namespace rrs
