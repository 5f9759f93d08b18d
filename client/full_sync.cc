#include "client/full_sync.h"

#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "client/progress.h"
#include "client/remote_table.h"
#include "client/restore_loader.h"
#include "client/staging.h"
#include "client/table_fetcher.h"
#include "common/cli/exit_codes.h"
#include "common/base/log.h"

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

// "DB 0: 10 keys, DB 2: 3 keys"
std::string per_db_text(const std::map<uint32_t, uint64_t>& per_db) {
  std::string out;
  for (auto [db, n] : per_db)
    out += (out.empty() ? "" : ", ") + std::string("DB ") + std::to_string(db) + ": " +
           std::to_string(n) + " keys";
  return out;
}

// A sync that stopped before the end: says exactly what the target was given,
// on stderr and in an `incomplete` line on stdout (`target=partial`: it holds
// what keys= says; `untouched`: it holds what it held before).
void report_incomplete(const ClientConfig& config, const TableInfo& info,
                       const RestoreLoader& loader, uint64_t failed, const Staging* staging,
                       const std::string& staging_left, Clock::time_point t0) {
  const LoadStats& st = loader.stats();
  const table::Header& h = info.header;
  const uint64_t unacked = loader.unacknowledged();
  std::string what = std::to_string(st.keys) + " of " + std::to_string(h.record_count) + " keys";
  if (!st.per_db.empty()) what += " (" + per_db_text(st.per_db) + ")";
  const std::string scripts =
      st.scripts ? std::to_string(st.scripts) + " Lua scripts (SCRIPT LOAD)" : "";
  std::string target;
  if (staging) {
    target = staging_left.empty() ? "untouched" : "untouched-staging-left";
    log::error("--atomic: the target's data is as it was: " + what +
               " had been loaded into staging DBs (" + staging->describe() + "), " +
               (staging_left.empty() ? "now flushed" : "not flushed: " + staging_left) +
               (scripts.empty() ? "" : "; only " + scripts + " stay loaded (a cache, not data)"));
  } else if (!loader.touched()) {
    target = "untouched";
    log::error("the sync stopped before it changed the target: it holds what it held before");
  } else {
    target = "partial";
    std::string extra;
    if (st.function_libraries)
      extra += ", " + std::to_string(st.function_libraries) + " function libraries";
    if (!scripts.empty()) extra += ", " + scripts;
    log::error("the sync stopped after loading " + what + extra +
               (unacked ? "; " + std::to_string(unacked) +
                              " more RESTOREs were sent but not acknowledged and may also have "
                              "been applied"
                        : "") +
               ": the target holds a partial copy of the table" +
               (loader.flushed() ? " (it was flushed first)" : "") + "; run again with " +
               (config.policy == TargetPolicy::kMerge ? "--merge to complete it"
                                                      : "--flush to replace it") +
               " (with --atomic a failed sync leaves the target as it was)");
  }
  const bool visible = staging == nullptr;
  std::printf("incomplete keys=%llu bytes=%llu dbs=%s functions=%u scripts=%llu "
              "skipped_expired=%llu failed=%llu unacknowledged=%llu table_keys=%llu seconds=%.3f "
              "epoch=%llu target=%s%s\n",
              static_cast<unsigned long long>(visible ? st.keys : 0),
              static_cast<unsigned long long>(visible ? st.bytes : 0),
              visible ? db_counts(st.per_db).c_str() : "-", visible ? st.function_libraries : 0,
              static_cast<unsigned long long>(st.scripts),
              static_cast<unsigned long long>(st.skipped_expired),
              static_cast<unsigned long long>(failed),
              static_cast<unsigned long long>(visible ? unacked : 0),
              static_cast<unsigned long long>(h.record_count), seconds_since(t0),
              static_cast<unsigned long long>(h.epoch), target.c_str(),
              staging ? (" staged_keys=" + std::to_string(st.keys) +
                         " staging=" + staging->describe())
                            .c_str()
                      : "");
  std::fflush(stdout);
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
  auto stop_fetch = [&] {
    fetcher.cancel();
    fetch_thread.join();
  };
  std::optional<Staging> staging;
  if (config.atomic) {
    bool refused = false;
    auto planned = Staging::plan(config.redis, *creds, io_timeout, info, config.policy, refused);
    if (!planned.ok()) {
      stop_fetch();
      log::error(planned.status().message());
      return refused ? exit_code::kRefused : exit_code::for_status(planned.status());
    }
    staging.emplace(std::move(*planned));
  }
  if (Status s = loader->prepare(info, config.policy, staging.has_value()); !s.ok()) {
    stop_fetch();
    log::error(s.message());
    if (!staging && loader->touched()) report_incomplete(config, info, *loader, 0, nullptr, "", t0);
    return loader->refused() ? exit_code::kRefused : exit_code::for_status(s);
  }
  if (staging) {
    bool refused = false;
    if (Status s = staging->prepare(info, loader->target_version(), refused); !s.ok()) {
      stop_fetch();
      log::error(s.message());
      if (Status d = staging->discard(loader->client_id()); !d.ok()) log::error(d.message());
      return refused ? exit_code::kRefused : exit_code::for_status(s);
    }
    loader->stage_into(staging->dbs());
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
  if (!load_status.ok() || !fetch_status.ok()) {
    const Status& why = !load_status.ok() ? load_status : fetch_status.wrap("fetch table");
    log::error(why.message());
    // A target that answered with an error (rather than going away or
    // stalling) still answers what it was sent before: count it.
    if (!load_status.ok() && load_status.kind() == ErrorKind::kFailed)
      loader->settle(std::min<std::chrono::milliseconds>(io_timeout, std::chrono::seconds(5)));
    std::string left;
    if (staging)
      if (Status d = staging->discard(loader->client_id()); !d.ok()) left = d.message();
    report_incomplete(config, info, *loader, loader->stats().failed + fetcher.failures().size(),
                      staging ? &*staging : nullptr, left, t0);
    return exit_code::for_status(why);
  }
  progress.update(seen, fetcher.bytes_read(), true);

  const LoadStats& st = loader->stats();
  const uint64_t failed = st.failed + fetcher.failures().size();
  for (const RecordFailure& f : fetcher.failures())
    log::error("record " + std::to_string(f.index) + " not loaded: " + f.reason);
  for (const std::string& e : st.errors) log::error(e);
  if (st.failed > st.errors.size())
    log::error("... and " + std::to_string(st.failed - st.errors.size()) + " more failures");

  const uint64_t records = h.record_count + info.scripts.lua_scripts.size();
  uint32_t functions = st.function_libraries;
  int code = exit_code::kOk;
  if (staging) {
    // Only a complete, checked copy goes in.
    Status swap_status;
    bool swapped = false, refused = false;
    if (failed > 0)
      swap_status = Status::error("--atomic", std::to_string(failed) + " of " +
                                                  std::to_string(records) +
                                                  " records and scripts were not loaded (see "
                                                  "above), so nothing was swapped in");
    else
      swap_status = staging->swap_in(st, swapped, refused);
    if (!swap_status.ok() && !swapped) {
      log::error(swap_status.message());
      std::string left;
      if (Status d = staging->discard(loader->client_id()); !d.ok()) left = d.message();
      report_incomplete(config, info, *loader, failed, &*staging, left, t0);
      return refused ? exit_code::kRefused : exit_code::kPartial;
    }
    if (!swap_status.ok()) {  // swapped, but the functions did not go in with the keys
      log::error(swap_status.message());
      code = exit_code::kPartial;
    } else {
      functions = staging->function_libraries();
    }
  }

  // transfer_s: when the last table byte was read and validated; the rest of
  // `seconds` is the loader finishing what was queued (and, with --atomic,
  // the swap).
  const double secs = seconds_since(t0);
  const double transfer_s = std::chrono::duration<double>(fetch_done - t0).count();
  std::printf("synced keys=%llu bytes=%llu dbs=%s functions=%u scripts=%llu skipped_expired=%llu "
              "failed=%llu seconds=%.3f transfer_s=%.3f MBps=%.1f keys_per_s=%.0f epoch=%llu%s\n",
              static_cast<unsigned long long>(st.keys), static_cast<unsigned long long>(st.bytes),
              db_counts(st.per_db).c_str(), functions,
              static_cast<unsigned long long>(st.scripts),
              static_cast<unsigned long long>(st.skipped_expired),
              static_cast<unsigned long long>(failed), secs, transfer_s,
              static_cast<double>(st.bytes) / 1e6 / secs, static_cast<double>(st.keys) / secs,
              static_cast<unsigned long long>(h.epoch),
              staging ? (" staging=" + staging->describe()).c_str() : "");
  std::fflush(stdout);
  if (failed > 0) {
    log::error(std::to_string(failed) + " of " + std::to_string(records) +
               " records and scripts were not loaded (see above); the target is incomplete");
    return exit_code::kPartial;
  }
  if (code != exit_code::kOk) return code;
  if (synced) {
    synced->header = h;
    synced->reader = std::move((*remote)->reader);
  }
  return exit_code::kOk;
}

}  // namespace rrs
