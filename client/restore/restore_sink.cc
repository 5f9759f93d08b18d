#include "client/restore/restore_sink.h"

#include "client/fetch/header_watch.h"
#include "client/sync/summary.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// "DB 0: 10 keys, DB 2: 3 keys"
std::string per_db_text(const std::map<uint32_t, uint64_t>& per_db) {
  std::string out;
  for (auto [db, n] : per_db)
    out += (out.empty() ? "" : ", ") + std::string("DB ") + std::to_string(db) + ": " +
           std::to_string(n) + " keys";
  return out;
}

std::chrono::milliseconds io_timeout(const ClientConfig& config) {
  return std::chrono::milliseconds(config.io_timeout);
}

}  // namespace

Status RestoreSink::connect() {
  RRS_ASSIGN_OR_RETURN(RedisCredentials creds, load_credentials(config_.redis_auth_file,
                                                                kClientAuthEnv, config_.redis_tls));
  auto loader = RestoreLoader::connect(config_.redis, creds, io_timeout(config_));
  if (!loader.ok()) return loader.status().wrap("connect to the target");
  loader_.emplace(std::move(*loader));
  return {};
}

std::string RestoreSink::needs_whole_table() const {
  // Each of the table's DBs gets a spare one picked before the first key.
  // Without --atomic a record in a DB the target lacks fails its SELECT.
  return config_.atomic ? "--atomic stages each of the table's DBs in a spare DB picked up front"
                        : "";
}

Status RestoreSink::check(const TableInfo& info) {
  info_ = &info;
  return {};
}

Status RestoreSink::prepare(const TableInfo& info) {
  if (config_.atomic) {
    RRS_ASSIGN_OR_RETURN(RedisCredentials creds,
                         load_credentials(config_.redis_auth_file, kClientAuthEnv,
                                          config_.redis_tls));
    RRS_ASSIGN_OR_RETURN(staging_, Staging::plan(config_.redis, creds, io_timeout(config_), info,
                                                 config_.policy));
  }
  stage_ = Stage::kPreparing;
  const TargetPolicy policy = flush_first_ ? TargetPolicy::kFlush : config_.policy;
  if (flush_first_ && config_.policy != TargetPolicy::kFlush)
    log::warn("flushing the target: it holds part of an older epoch's table, loaded by this "
              "sync into a target that was empty");
  RRS_RETURN_IF_ERROR(loader_->prepare(info, policy, staging_.has_value()));
  if (staging_) {
    stage_ = Stage::kStaging;
    RRS_RETURN_IF_ERROR(staging_->prepare(info, loader_->target()));
    loader_->stage_into(staging_->dbs());
  }
  if (config_.follow) loader_->guard_ttls();
  stage_ = Stage::kLoading;
  return {};
}

Status RestoreSink::settle_if_refused(Status s) {
  // A target that answered with an error (rather than going away or
  // stalling) still answers what it was sent before: count it.
  if (!s.ok() && s.kind() == ErrorKind::kFailed)
    loader_->settle(
        std::min<std::chrono::milliseconds>(io_timeout(config_), std::chrono::seconds(5)));
  return s;
}

Status RestoreSink::load(const RecordBatch& batch) {
  return settle_if_refused(loader_->load(batch));
}

Status RestoreSink::take_failures(const std::vector<RecordFailure>& failures) {
  invalid_ = failures;
  return {};
}

uint64_t RestoreSink::records_and_scripts() const {
  return info_->header.record_count + info_->scripts.lua_scripts.size();
}

Status RestoreSink::drain() { return settle_if_refused(loader_->finish()); }

Status RestoreSink::finish() {
  const LoadStats& st = loader_->stats();
  for (const RecordFailure& f : invalid_)
    log::error("record " + std::to_string(f.index) + " not loaded: " + f.reason);
  for (const std::string& e : st.errors) log::error(e);
  if (st.failed > st.errors.size())
    log::error("... and " + std::to_string(st.failed - st.errors.size()) + " more failures");
  if (!staging_) return {};

  // Only a complete, checked copy goes in.
  const uint64_t failed = counts().failed;
  if (failed > 0)
    return Status::error("--atomic", std::to_string(failed) + " of " +
                                         std::to_string(records_and_scripts()) +
                                         " records and scripts were not loaded (see above), so "
                                         "nothing was swapped in");
  auto swapped = staging_->swap_in(st);
  if (!swapped.ok()) {
    const Status& s = swapped.status();
    return s.kind() == ErrorKind::kRefused ? s : s.as(ErrorKind::kFailed);
  }
  swap_trouble_ = swapped->trouble;
  return {};
}

Status RestoreSink::verdict() const {
  if (!swap_trouble_.ok()) return swap_trouble_;  // the keys are in, not all else
  const uint64_t failed = counts().failed;
  if (failed == 0) return {};
  return Status::error("load the table",
                       std::to_string(failed) + " of " + std::to_string(records_and_scripts()) +
                           " records and scripts were not loaded (see above); the target is "
                           "incomplete");
}

LoadCounts RestoreSink::counts() const {
  const LoadStats& st = loader_->stats();
  LoadCounts c;
  c.keys = st.keys;
  c.bytes = st.bytes;
  c.per_db = st.per_db;
  c.functions = st.function_libraries;
  if (staging_ && stage_ == Stage::kLoading && swap_trouble_.ok())
    c.functions = staging_->function_libraries();
  c.scripts = st.scripts;
  c.skipped_expired = st.skipped_expired;
  c.failed = st.failed + invalid_.size();
  return c;
}

std::string RestoreSink::summary_fields() const {
  return staging_ ? " staging=" + staging_->describe() : "";
}

void RestoreSink::abandon(const Status&, uint64_t invalid_records, double seconds) {
  switch (stage_) {
    case Stage::kPlanning: return;
    case Stage::kPreparing:
      if (!staging_ && loader_->touched()) report_incomplete(0, "", seconds);
      return;
    case Stage::kStaging:
      if (Status d = staging_->discard(loader_->client_id()); !d.ok()) log::error(d.message());
      return;
    case Stage::kLoading: break;
  }
  std::string left;
  if (staging_)
    if (Status d = staging_->discard(loader_->client_id()); !d.ok()) left = d.message();
  // invalid_records counts the fetcher's failures whether or not
  // take_failures() has copied them into invalid_ yet.
  report_incomplete(loader_->stats().failed + invalid_records, left, seconds);
}

Status RestoreSink::start_over() {
  const bool partial = stage_ != Stage::kPlanning && !staging_ && loader_->touched();
  if (partial && config_.policy == TargetPolicy::kMerge)
    return Status::error("start over",
                         "the target holds part of the old epoch's table, loaded with --merge on "
                         "top of its own keys, which cannot be taken out again");
  if (staging_ && stage_ != Stage::kPlanning)
    RRS_RETURN_IF_ERROR(staging_->discard(loader_->client_id()).wrap("start over"));
  flush_first_ = flush_first_ || partial;
  stage_ = Stage::kPlanning;
  info_ = nullptr;
  loader_.reset();  // its pipeline is drained; connect() opens a new one
  staging_.reset();
  invalid_.clear();
  swap_trouble_ = {};
  return {};
}

// Says exactly what the target was given, on stderr and in an `incomplete`
// line on stdout.
void RestoreSink::report_incomplete(uint64_t failed, const std::string& staging_left,
                                    double seconds) {
  const LoadStats& st = loader_->stats();
  const table::Header& h = info_->header;
  const uint64_t unacked = loader_->unacknowledged();
  std::string what = std::to_string(st.keys) + " " + of_table_keys(h);
  if (!st.per_db.empty()) what += " (" + per_db_text(st.per_db) + ")";
  const std::string scripts = st.scripts ? std::to_string(st.scripts) + " Lua scripts (SCRIPT LOAD)"
                                         : "";
  IncompleteReport r;
  if (staging_) {
    r.target = staging_left.empty() ? "untouched" : "untouched-staging-left";
    r.staging = staging_->describe();
    log::error("--atomic: the target's data is as it was: " + what +
               " had been loaded into staging DBs (" + r.staging + "), " +
               (staging_left.empty() ? "now flushed" : "not flushed: " + staging_left) +
               (scripts.empty() ? "" : "; only " + scripts + " stay loaded (a cache, not data)"));
  } else if (!loader_->touched()) {
    r.target = "untouched";
    log::error("the sync stopped before it changed the target: it holds what it held before");
  } else {
    r.target = "partial";
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
               (loader_->flushed() ? " (it was flushed first)" : "") + "; run again with " +
               (config_.policy == TargetPolicy::kMerge ? "--merge to complete it"
                                                       : "--flush to replace it") +
               " (with --atomic a failed sync leaves the target as it was)");
  }
  r.counts = counts();
  r.counts.failed = failed;
  r.counts.functions = st.function_libraries;
  r.unacknowledged = unacked;
  r.table_keys = h.record_count;
  r.seconds = seconds;
  r.epoch = h.epoch;
  print_incomplete(r);
}

}  // namespace rrs
