#include "client/full_sync.h"

#include <cstdio>
#include <thread>

#include "client/progress.h"
#include "client/remote_table.h"
#include "client/restore_loader.h"
#include "client/table_fetcher.h"
#include "common/exit_codes.h"
#include "common/log.h"

namespace rrs {
namespace {

int fail(const Status& s) {
  log::error(s.message());
  return exit_code::for_status(s);
}

// --no-load: fetch and validate every record, load nothing. Measures the
// transfer alone and checks a table end to end without touching a Redis.
int run_fetch_only(const ClientConfig& config, Clock::time_point t0) {
  auto remote = open_remote_table(config, t0);
  if (!remote.ok()) return fail(remote.status());
  TableFetcher& fetcher = *(*remote)->fetcher;
  const TableInfo& info = (*remote)->info;
  const auto t_fetch = Clock::now();
  Status fetch_status;
  std::thread fetch_thread([&] { fetch_status = fetcher.run(); });
  uint64_t records = 0;
  while (auto batch = (*remote)->queue.pop()) records += batch->records.size();
  fetch_thread.join();
  if (!fetch_status.ok()) return fail(fetch_status.wrap("fetch table"));
  const double secs = seconds_since(t_fetch);
  for (const RecordFailure& f : fetcher.failures())
    log::error("record " + std::to_string(f.index) + " failed validation: " + f.reason);
  std::printf("fetched keys=%llu functions=%u scripts=%zu table_bytes=%llu failed=%zu "
              "seconds=%.3f MBps=%.1f epoch=%llu\n",
              static_cast<unsigned long long>(records), info.scripts.function_libraries,
              info.scripts.lua_scripts.size(),
              static_cast<unsigned long long>(fetcher.bytes_read()), fetcher.failures().size(),
              secs, static_cast<double>(fetcher.bytes_read()) / 1e6 / secs,
              static_cast<unsigned long long>(info.header.epoch));
  std::fflush(stdout);
  return fetcher.failures().empty() ? exit_code::kOk : exit_code::kPartial;
}

}  // namespace

int run_full_sync(const ClientConfig& config, SyncedTable* synced) {
  const auto t0 = Clock::now();
  if (config.no_load) return run_fetch_only(config, t0);
  auto creds = load_credentials(config.redis_auth_file, kClientAuthEnv);
  if (!creds.ok()) return fail(creds.status());
  auto io_timeout = std::chrono::milliseconds(config.io_timeout);
  auto loader = RestoreLoader::connect(config.redis, *creds, io_timeout);
  if (!loader.ok()) return fail(loader.status().wrap("connect to the target"));

  auto remote = open_remote_table(config, t0);
  if (!remote.ok()) return fail(remote.status());
  TableFetcher& fetcher = *(*remote)->fetcher;
  const TableInfo& info = (*remote)->info;
  const table::Header& h = info.header;

  // Reading starts before the target is prepared (FLUSHALL of a big target
  // can take a while): the fetcher fills its buffers, then waits for the
  // loader while it keeps the server told it is alive.
  Status fetch_status;
  Clock::time_point fetch_done;
  std::thread fetch_thread([&] {
    fetch_status = fetcher.run();
    fetch_done = Clock::now();
  });
  if (Status s = loader->prepare(info, config.policy); !s.ok()) {
    fetcher.cancel();
    fetch_thread.join();
    log::error(s.message());
    return loader->refused() ? exit_code::kRefused : exit_code::for_status(s);
  }
  Progress progress(h.record_count, h.total_size, config.quiet);
  Status load_status;
  uint64_t seen = 0;
  while (auto batch = (*remote)->queue.pop()) {
    seen += batch->records.size();
    load_status = loader->load(*batch);
    if (!load_status.ok()) break;
    progress.update(seen, fetcher.bytes_read());
  }
  if (load_status.ok()) load_status = loader->finish();
  if (!load_status.ok()) fetcher.cancel();
  fetch_thread.join();
  if (!load_status.ok()) return fail(load_status);
  if (!fetch_status.ok()) return fail(fetch_status.wrap("fetch table"));
  progress.update(seen, fetcher.bytes_read(), true);

  const LoadStats& st = loader->stats();
  const double secs = seconds_since(t0);
  const uint64_t failed = st.failed + fetcher.failures().size();
  for (const RecordFailure& f : fetcher.failures())
    log::error("record " + std::to_string(f.index) + " not loaded: " + f.reason);
  for (const std::string& e : st.errors) log::error(e);
  if (st.failed > st.errors.size())
    log::error("... and " + std::to_string(st.failed - st.errors.size()) + " more failures");

  // transfer_s: when the last table byte was read and validated; the rest of
  // `seconds` is the loader finishing what was queued.
  const double transfer_s = std::chrono::duration<double>(fetch_done - t0).count();
  std::printf("synced keys=%llu bytes=%llu dbs=%s functions=%u scripts=%llu skipped_expired=%llu "
              "failed=%llu seconds=%.3f transfer_s=%.3f MBps=%.1f keys_per_s=%.0f epoch=%llu\n",
              static_cast<unsigned long long>(st.keys), static_cast<unsigned long long>(st.bytes),
              db_counts(st.per_db).c_str(), st.function_libraries,
              static_cast<unsigned long long>(st.scripts),
              static_cast<unsigned long long>(st.skipped_expired),
              static_cast<unsigned long long>(failed), secs, transfer_s,
              static_cast<double>(st.bytes) / 1e6 / secs, static_cast<double>(st.keys) / secs,
              static_cast<unsigned long long>(h.epoch));
  std::fflush(stdout);
  if (failed > 0) {
    log::error(std::to_string(failed) + " of " +
               std::to_string(h.record_count + info.scripts.lua_scripts.size()) +
               " records and scripts were not loaded (see above); the target is incomplete");
    return exit_code::kPartial;
  }
  if (synced) {
    synced->header = h;
    synced->reader = std::move((*remote)->reader);
  }
  return exit_code::kOk;
}

}  // namespace rrs
