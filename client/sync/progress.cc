#include "client/sync/progress.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "common/base/log.h"

namespace rrs {

Progress::Progress(uint64_t total_records, uint64_t total_bytes, bool quiet)
    : total_records_(total_records),
      total_bytes_(total_bytes),
      quiet_(quiet),
      // The redrawn bar is for a person; JSON lines are for a log shipper.
      tty_(isatty(STDERR_FILENO) == 1 && log::format() == log::Format::kText) {}

void Progress::update(uint64_t records_done, uint64_t bytes_read, bool final) {
  if (quiet_) return;
  const double since = std::chrono::duration<double>(Clock::now() - last_).count();
  if (!final && since < (tty_ ? 0.2 : 5.0)) return;
  last_ = Clock::now();
  const double elapsed = seconds_since(start_);
  const double pct = total_records_ ? 100.0 * static_cast<double>(records_done) /
                                          static_cast<double>(total_records_)
                                    : 100.0;
  const double mb = static_cast<double>(bytes_read) / 1e6;
  if (tty_) {
    const int width = 30, filled = static_cast<int>(pct / 100.0 * width);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %llu/%llu keys  %.0f/%.0f MB  %.1f s%s", filled,
                 "##############################", width - filled, "", pct,
                 static_cast<unsigned long long>(records_done),
                 static_cast<unsigned long long>(total_records_), mb,
                 static_cast<double>(total_bytes_) / 1e6, elapsed, final ? "\n" : "");
  } else {
    char line[160];
    std::snprintf(line, sizeof line, "progress %.1f%%: %llu/%llu keys, %.0f/%.0f MB read, %.1f s",
                  pct, static_cast<unsigned long long>(records_done),
                  static_cast<unsigned long long>(total_records_), mb,
                  static_cast<double>(total_bytes_) / 1e6, elapsed);
    log::info(line);
  }
}

}  // namespace rrs
