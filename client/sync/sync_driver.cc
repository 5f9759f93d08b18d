#include "client/sync/sync_driver.h"

#include <thread>

#include "client/client_metrics.h"
#include "client/fetch/remote_table.h"
#include "client/sync/conversion.h"
#include "client/sync/progress.h"
#include "client/sync/summary.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// A sync's end in the metrics: what the target took, refused, and skipped;
// `invalid` of the failures were records that failed validation.
void count_loaded(const LoadCounts& counts, uint64_t invalid) {
  ClientMetrics& m = client_metrics();
  m.loaded_records.add(counts.keys);
  m.loaded_bytes.add(counts.bytes);
  m.failed_invalid.add(invalid);
  m.failed_refused.add(counts.failed > invalid ? counts.failed - invalid : 0);
  m.skipped_expired.add(counts.skipped_expired);
  m.syncs.add();
}

// The fetcher on a thread of its own; cancelled and joined at the latest
// when this goes out of scope.
class FetchThread {
 public:
  explicit FetchThread(TableFetcher& fetcher)
      : fetcher_(fetcher), thread_([this] {
          status_ = fetcher_.run();
          done_ = Clock::now();
        }) {}
  FetchThread(const FetchThread&) = delete;
  FetchThread& operator=(const FetchThread&) = delete;
  ~FetchThread() { stop(); }

  void stop() {
    if (!thread_.joinable()) return;
    fetcher_.cancel();
    thread_.join();
  }
  // Waits for the fetcher to finish on its own; its status.
  Status join() {
    if (thread_.joinable()) thread_.join();
    return status_.wrap("fetch table");
  }
  Clock::time_point done() const { return done_; }

 private:
  TableFetcher& fetcher_;
  Status status_;
  Clock::time_point done_;
  std::thread thread_;
};

// What the master held that the table could not carry, which a replica of
// it would have: refused unless the user says to drop it.
Status check_nothing_dropped(const ClientConfig& config, const table::Header& h) {
  if (h.keys_lost != 0) {
    const std::string what = std::to_string(h.keys_lost) +
                             " keys the sidecar listed but could not copy (its log names them)";
    if (!config.allow_missing_keys)
      return Status::error("check the table",
                           "the table lacks " + what +
                               "; fix their cause and take a new snapshot, or give "
                               "--allow-missing-keys to load the table without them")
          .as(ErrorKind::kRefused);
    log::warn("loading a table that lacks " + what + " (--allow-missing-keys)");
  }
  if (h.module_aux_count == 0) return {};
  const std::string what = std::to_string(h.module_aux_count) +
                           " blocks of module data that are not keys (MODULE_AUX)";
  if (config.skip_module_data) {
    log::warn("dropping " + what + " (--skip-module-data)");
    return {};
  }
  return Status::error("check the table", "the master's RDB held " + what +
                                              ", which the table cannot carry; a target without "
                                              "that module would refuse them. Give "
                                              "--skip-module-data to load the keys without them")
      .as(ErrorKind::kRefused);
}

// A table read from an RDB file (rdma-server --source rdb) has no change log
// to follow, and a place in the master's history only when the file named
// it: refused before the target is touched when the flags need either.
Status check_file_history(const ClientConfig& config, const table::Header& h) {
  if (h.source_kind != table::SourceKind::kRdbFile) return {};
  if (config.follow)
    return Status::error("--follow", "the table was read from an RDB file (rdma-server --source "
                                     "rdb), which has no change log to follow; drop --follow "
                                     "(with --mode replica --handoff the master itself "
                                     "continues the target, when the file says from where)")
        .as(ErrorKind::kRefused);
  if (config.handoff && h.source_replid.empty())
    return Status::error("--handoff",
                         "the table was read from an RDB file (rdma-server --source rdb) that "
                         "had no repl-id/repl-offset aux fields, so it has no replication ID "
                         "and offset a master could continue from; drop --handoff (the target "
                         "is then a standalone copy), or serve a file saved on a replica, or on "
                         "a master with a replication backlog")
        .as(ErrorKind::kRefused);
  return {};
}

// The header's counts of what the table could not carry, from the header
// read last; while it is being written they may still grow.
struct Dropped {
  uint64_t keys_lost = 0;
  uint32_t module_aux = 0;
  explicit Dropped(const table::Header& h)
      : keys_lost(h.keys_lost), module_aux(h.module_aux_count) {}
  bool operator==(const Dropped&) const = default;
};

// Hands what the fetcher learned of the table (more records; once complete,
// the final header and DB directory) to the copies the driver and the load
// path hold. Only while the fetch thread is not running.
void catch_up(RemoteTable& remote, Conversion& conversion) {
  const TableInfo& later = remote.fetcher->table();
  remote.info.catch_up(later.header, later.dbs);
  conversion.catch_up(later);
}

Progress make_progress(const ClientConfig& config, const TableInfo& info) {
  if (!info.complete()) return Progress(std::nullopt, config.quiet);
  return Progress(Progress::Totals{info.header.record_count, read_size(info.header)}, config.quiet);
}

// Everything from prepare to finish; a failure is the caller's to abandon.
Status load_everything(const ClientConfig& config, RemoteTable& remote, FetchThread& fetch,
                       Conversion& conversion, LoadSink& sink) {
  RRS_RETURN_IF_ERROR(sink.prepare(conversion.info()));
  Progress progress = make_progress(config, remote.info);
  uint64_t seen = 0;
  while (auto batch = remote.queue.pop()) {
    seen += batch->records.size();
    client_metrics().fetched_records.add(batch->records.size());
    if (conversion.needed()) RRS_RETURN_IF_ERROR(conversion.convert(*batch));
    RRS_RETURN_IF_ERROR(sink.load(*batch));
    if (!progress.has_totals())
      if (const TableFetcher::Watermark w = remote.fetcher->watermark(); w.complete)
        progress.set_totals({w.records, w.read_bytes});
    progress.update(seen, remote.fetcher->bytes_read());
  }
  Status drained = sink.drain();
  RRS_RETURN_IF_ERROR(fetch.join());
  RRS_RETURN_IF_ERROR(drained);
  // The fetch thread is done: the table is complete, and the load path
  // sees its final header and DB directory from here on.
  const Dropped before(remote.info.header);
  catch_up(remote, conversion);
  if (sink.loads() && Dropped(remote.info.header) != before)
    RRS_RETURN_IF_ERROR(check_nothing_dropped(config, remote.info.header));
  RRS_RETURN_IF_ERROR(sink.take_failures(remote.fetcher->failures()));
  progress.set_totals({remote.info.header.record_count, read_size(remote.info.header)});
  progress.update(seen, remote.fetcher->bytes_read(), true);
  return sink.finish();
}

// A load path that needs the whole table up front (or a conversion that
// must count its lossy records first) waits here for a table still being
// written to be complete, before the target is checked.
Status wait_if_needed(RemoteTable& remote, Conversion& conversion, const LoadSink& sink) {
  if (remote.info.complete()) return {};
  std::string why = sink.needs_whole_table();
  if (why.empty()) why = conversion.needs_whole_table();
  if (why.empty()) return {};
  log::info("the sidecar is still writing table epoch " + std::to_string(remote.info.header.epoch) +
            " (" + std::to_string(remote.info.header.record_count) +
            " records so far); waiting until it is complete before loading: " + why);
  RRS_RETURN_IF_ERROR(remote.fetcher->wait_until_complete().status());
  catch_up(remote, conversion);
  log::info("table epoch " + std::to_string(remote.info.header.epoch) +
            " is complete: " + std::to_string(remote.info.header.record_count) + " keys in " +
            std::to_string(remote.info.header.db_count) + " DBs");
  return {};
}

// One attempt at the sync, from connect to verdict. When it fails because
// the sidecar replaced the epoch and the sink could undo what it did, it
// sets `again` instead of abandoning the target (when `may_start_over`).
Result<SyncedTable> sync_once(const ClientConfig& config, LoadSink& sink, Clock::time_point t0,
                              bool may_start_over, bool& again) {
  again = false;
  // --connect-timeout counts from each attempt's start: a start over after
  // an hour's load still waits for the new epoch's snapshot.
  const auto attempt = Clock::now();
  RRS_RETURN_IF_ERROR(sink.connect());
  RRS_ASSIGN_OR_RETURN(std::unique_ptr<RemoteTable> remote, open_remote_table(config, attempt));
  // Before the sink prepared the target nothing needs undoing; after it,
  // the sink decides whether it can.
  const auto replaced = [&](const Status& s) {
    const std::optional<uint64_t> next = remote->fetcher->replaced_by();
    if (!next || !may_start_over) return false;
    if (Status undone = sink.start_over(); !undone.ok()) {
      log::warn(undone.message());
      return false;
    }
    log::warn(s.message() + "; starting over on epoch " + std::to_string(*next));
    return again = true;
  };
  if (sink.loads()) RRS_RETURN_IF_ERROR(check_nothing_dropped(config, remote->info.header));
  RRS_RETURN_IF_ERROR(check_file_history(config, remote->info.header));
  // A target that does not read the master's RDB version gets the table
  // converted; what cannot be is refused here, before anything is loaded.
  RRS_ASSIGN_OR_RETURN(Conversion conversion,
                       Conversion::plan(config, remote->info, sink.target()));
  const Dropped at_open(remote->info.header);
  if (Status s = wait_if_needed(*remote, conversion, sink); !s.ok()) {
    (void)replaced(s);
    return s;
  }
  if (sink.loads() && Dropped(remote->info.header) != at_open)
    RRS_RETURN_IF_ERROR(check_nothing_dropped(config, remote->info.header));
  RRS_RETURN_IF_ERROR(conversion.check_losses(*remote->fetcher));
  RRS_RETURN_IF_ERROR(sink.check(conversion.info()));

  // Reading starts before the target is prepared (FLUSHALL of a big target
  // can take a while): the fetcher fills its buffers, then waits for the
  // sink while it keeps the server told it is alive.
  const auto t_fetch = Clock::now();
  FetchThread fetch(*remote->fetcher);
  if (Status s = load_everything(config, *remote, fetch, conversion, sink); !s.ok()) {
    fetch.stop();  // after it, the fetcher's failures and table may be read
    if (replaced(s)) return s;
    catch_up(*remote, conversion);  // what abandon() reports counts the records known
    sink.abandon(s, remote->fetcher->failures().size(), seconds_since(t0));
    return s;
  }

  SyncReport report;
  report.counts = sink.counts();
  report.seconds = seconds_since(t0);
  report.transfer_s = std::chrono::duration<double>(fetch.done() - t0).count();
  report.fetch_s = std::chrono::duration<double>(fetch.done() - t_fetch).count();
  report.table_bytes = remote->fetcher->bytes_read();
  report.epoch = remote->info.header.epoch;
  report.fields = sink.summary_fields() + conversion.summary_fields();
  if (sink.loads()) count_loaded(report.counts, remote->fetcher->failures().size());
  if (sink.loads())
    print_synced(report);
  else
    print_fetched(report);
  RRS_RETURN_IF_ERROR(sink.verdict());
  return SyncedTable{std::move(remote->reader), remote->info.header};
}

}  // namespace

Result<SyncedTable> run_sync(const ClientConfig& config, LoadSink& sink) {
  // The time reported is what the user waited, every attempt included.
  const auto t0 = Clock::now();
  for (uint32_t restarts = 0;; ++restarts) {
    // Each start over takes one of --retries.
    bool again = false;
    Result<SyncedTable> synced = sync_once(config, sink, t0, restarts < config.retries, again);
    if (!again) return synced;
  }
}

}  // namespace rrs
