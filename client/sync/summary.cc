#include "client/sync/summary.h"

#include <cstdio>

namespace rrs {
namespace {

using ull = unsigned long long;

double per_second(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0; }

}  // namespace

void print_synced(const SyncReport& r) {
  const LoadCounts& c = r.counts;
  std::printf("synced keys=%llu bytes=%llu dbs=%s functions=%u scripts=%llu skipped_expired=%llu "
              "failed=%llu seconds=%.3f transfer_s=%.3f MBps=%.1f keys_per_s=%.0f epoch=%llu%s\n",
              ull(c.keys), ull(c.bytes), db_counts(c.per_db).c_str(), c.functions, ull(c.scripts),
              ull(c.skipped_expired), ull(c.failed), r.seconds, r.transfer_s,
              per_second(static_cast<double>(c.bytes) / 1e6, r.seconds),
              per_second(static_cast<double>(c.keys), r.seconds), ull(r.epoch), r.fields.c_str());
  std::fflush(stdout);
}

void print_fetched(const SyncReport& r) {
  const LoadCounts& c = r.counts;
  std::printf("fetched keys=%llu functions=%u scripts=%llu table_bytes=%llu failed=%llu "
              "seconds=%.3f MBps=%.1f epoch=%llu\n",
              ull(c.keys), c.functions, ull(c.scripts), ull(r.table_bytes), ull(c.failed),
              r.fetch_s, per_second(static_cast<double>(r.table_bytes) / 1e6, r.fetch_s),
              ull(r.epoch));
  std::fflush(stdout);
}

void print_incomplete(const IncompleteReport& r) {
  const LoadCounts& c = r.counts;
  // With --atomic the keys went to staging DBs only: the target shows none.
  const bool visible = r.staging.empty();
  std::string staged;
  if (!visible) staged = " staged_keys=" + std::to_string(c.keys) + " staging=" + r.staging;
  std::printf("incomplete keys=%llu bytes=%llu dbs=%s functions=%u scripts=%llu "
              "skipped_expired=%llu failed=%llu unacknowledged=%llu table_keys=%llu seconds=%.3f "
              "epoch=%llu target=%s%s\n",
              ull(visible ? c.keys : 0), ull(visible ? c.bytes : 0),
              visible ? db_counts(c.per_db).c_str() : "-", visible ? c.functions : 0,
              ull(c.scripts), ull(c.skipped_expired), ull(c.failed),
              ull(visible ? r.unacknowledged : 0), ull(r.table_keys), r.seconds, ull(r.epoch),
              r.target.c_str(), staged.c_str());
  std::fflush(stdout);
}

std::string db_counts(const std::map<uint32_t, uint64_t>& per_db) {
  std::string out;
  for (auto [db, n] : per_db)
    out += (out.empty() ? "" : ",") + std::to_string(db) + ":" + std::to_string(n);
  return out.empty() ? "-" : out;
}

}  // namespace rrs
