#include "client/cluster/cluster_sink.h"

#include <poll.h>

#include <algorithm>
#include <thread>

#include "client/fetch/header_watch.h"
#include "client/restore/restore_command.h"
#include "client/sync/summary.h"
#include "common/base/log.h"

namespace rrs {
namespace {

// Bounds on what we hold for the masters together: enough to keep each
// busy, small enough that a slow one cannot make us buffer the table.
constexpr size_t kMaxInFlight = 16384;
constexpr size_t kMaxHeldBytes = 32u << 20;
constexpr size_t kMaxErrorsKept = 10;
// A command redirected or resent this often is going round in circles.
constexpr uint32_t kMaxHops = 16;
// How long a command waits before it is sent again (TRYAGAIN, CLUSTERDOWN,
// a master unreachable while its replica takes over).
constexpr std::chrono::milliseconds kRetryAfter{100};
// Connecting to a master blocks the loop; a failed-over one is not waited on.
constexpr std::chrono::milliseconds kMaxConnectWait{2000};

}  // namespace

Status ClusterSink::connect() {
  for (const Endpoint& m : map_.masters())
    if (pipeline(m) == nullptr)
      return Status::error("connect to the target cluster",
                           "master " + m.to_string() + " did not answer")
          .as(ErrorKind::kUnavailable);
  return {};
}

Status ClusterSink::check(const TableInfo& info) {
  info_ = &info;
  // Without a DB list yet, target_.check() cannot see a DB other than 0.
  check_each_db_ = !info.complete();
  return target_.check(shard_, info);
}

Status ClusterSink::prepare(const TableInfo& info) {
  RRS_RETURN_IF_ERROR(target_.prepare_once(info));
  if (config_.follow) guard_ = TtlGuard::starting(unix_ms());
  loading_ = true;
  return {};
}

NodePipeline* ClusterSink::pipeline(const Endpoint& node) {
  const std::string name = node.to_string();
  if (auto it = pipelines_.find(name); it != pipelines_.end()) return &it->second;
  auto p = NodePipeline::connect(node, target_.credentials(),
                                 std::min(target_.io_timeout(), kMaxConnectWait));
  if (!p.ok()) {
    log::warn("cluster master " + name + " unreachable: " + p.status().message());
    return nullptr;
  }
  return &pipelines_.emplace(name, std::move(*p)).first->second;
}

void ClusterSink::send_later(RoutedCommand command, std::chrono::milliseconds after) {
  later_.push_back({Clock::now() + after, std::move(command)});
}

NodePipeline* ClusterSink::owner_pipeline(uint16_t slot) {
  const int owner = map_.owner(slot);
  return owner == SlotMap::kUnowned ? nullptr : pipeline(map_.masters()[owner]);
}

void ClusterSink::route(RoutedCommand command) {
  NodePipeline* p = owner_pipeline(command.slot);
  if (p == nullptr) {
    map_stale_ = true;
    return send_later(std::move(command), kRetryAfter);
  }
  p->resend(std::move(command), false);
}

Status ClusterSink::load(const RecordBatch& batch) {
  const int64_t now = unix_ms();
  const bool plain_strings = target_.plain_strings();
  for (const Record& r : batch.records) {
    if (check_each_db_ && r.db != 0)
      return Status::error("load the table into the cluster",
                           "record " + std::to_string(r.index) + " is in DB " +
                               std::to_string(r.db) +
                               ", and a cluster has only DB 0; sync that master into a "
                               "standalone target instead")
          .as(ErrorKind::kRefused);
    int64_t expire_at = r.expire_at_ms;  // a guarded key's becomes the guard's
    if (!(guard_ && guard_->hold(0, r.key, expire_at, now)) && expire_at >= 0 && expire_at <= now) {
      counts_.skipped_expired++;
      continue;
    }
    const uint16_t slot = hash_slot(r.key);
    const std::optional<std::string_view> value = plain_strings ? plain_string(r.payload, scratch_)
                                                                : std::nullopt;
    if (value && expire_at < 0 && SlotMsets::gathers(r.key, *value)) {
      if (msets_.add(slot, r.index, r.key, *value)) send_mset(slot);
      if (msets_.over_budget()) RRS_RETURN_IF_ERROR(send_msets());
    } else if (NodePipeline* p = owner_pipeline(slot)) {
      p->write_record(slot, r.index, r.key, expire_at, r.payload, value);
    } else {
      RoutedCommand c;
      c.slot = slot;
      c.index = r.index;
      c.bytes = r.key.size() + r.payload.size();
      c.key = r.key;
      append_write(c.wire, r.key, expire_at, r.payload, value);
      map_stale_ = true;
      send_later(std::move(c), kRetryAfter);
    }
    if (in_flight() >= kMaxInFlight || held_bytes() >= kMaxHeldBytes)
      RRS_RETURN_IF_ERROR(pump(kMaxInFlight / 2, kMaxHeldBytes / 2));
  }
  return pump(kMaxInFlight, kMaxHeldBytes);
}

void ClusterSink::send_mset(uint16_t slot) {
  msets_sent_++;
  if (NodePipeline* p = owner_pipeline(slot)) return p->write_mset(slot, msets_);
  std::string wire;
  RoutedCommand c = msets_.flush(slot, wire);
  c.wire = std::move(wire);
  map_stale_ = true;
  send_later(std::move(c), kRetryAfter);
}

Status ClusterSink::send_msets() {
  for (uint16_t slot : msets_.filled()) {
    send_mset(slot);
    if (in_flight() >= kMaxInFlight || held_bytes() >= kMaxHeldBytes)
      RRS_RETURN_IF_ERROR(pump(kMaxInFlight / 2, kMaxHeldBytes / 2));
  }
  return {};
}

void ClusterSink::split(const RoutedCommand& mset, bool later) {
  auto sets = split_mset(mset);
  if (!sets.ok()) {  // cannot happen: this client wrote it
    counts_.failed += mset.keys();
    if (errors_.size() < kMaxErrorsKept) errors_.push_back(sets.status().message());
    return;
  }
  split_++;
  for (RoutedCommand& c : *sets) {
    if (later)
      send_later(std::move(c), kRetryAfter);
    else
      route(std::move(c));
  }
}

size_t ClusterSink::in_flight() const {
  size_t n = later_.size();
  for (const auto& [name, p] : pipelines_) n += p.in_flight();
  return n;
}

uint64_t ClusterSink::keys_in_flight() const {
  uint64_t n = 0;
  for (const Later& l : later_) n += l.command.keys();
  for (const auto& [name, p] : pipelines_) n += p.keys_in_flight();
  return n;
}

size_t ClusterSink::held_bytes() const {
  size_t n = 0;
  for (const Later& l : later_) n += l.command.wire.size();
  for (const auto& [name, p] : pipelines_) n += p.held_bytes();
  return n;
}

void ClusterSink::on_outcome(const std::string& node, CommandOutcome o) {
  using What = CommandOutcome::What;
  RoutedCommand& c = o.command;
  if (o.what == What::kLoaded) {
    counts_.keys += c.keys();
    counts_.bytes += c.bytes;
    counts_.per_db[0] += c.keys();
    per_master_[node] += c.keys();
    return;
  }
  if (o.what != What::kFailed && ++c.hops > kMaxHops) {
    o.what = What::kFailed;
    o.error = "sent " + std::to_string(kMaxHops) +
              " times without landing (last: " + (o.error.empty() ? "a redirection" : o.error) +
              ")";
  }
  switch (o.what) {
    case What::kLoaded: return;
    case What::kFailed:
      counts_.failed += c.keys();
      if (errors_.size() < kMaxErrorsKept)
        errors_.push_back(write_failure(c.keys() > 1 ? "MSET" : "writing a record",
                                        static_cast<uint32_t>(c.keys()), c.key, c.index, 0, o.error,
                                        static_cast<uint16_t>(info_->header.rdb_version),
                                        target_.oldest()) +
                          " (cluster master " + node + ")");
      return;
    case What::kRedirect:
      if (o.redirect.ask) {
        asked_++;
        // Mid-migration, a slot's keys are on two nodes: one SET each.
        if (c.keys() > 1) return split(c, false);
        if (NodePipeline* p = pipeline(o.redirect.to)) return p->resend(std::move(c), true);
        return send_later(std::move(c), kRetryAfter);
      }
      moved_++;
      map_.move(o.redirect.slot, o.redirect.to);
      return route(std::move(c));
    case What::kRetry:
      retried_++;
      if (o.error.rfind("CLUSTERDOWN", 0) == 0) {
        map_stale_ = true;
        if (c.keys() > 1) return split(c, true);
      } else if (c.keys() > 1) {
        return split(c, false);  // TRYAGAIN: the slot is migrating
      }
      return send_later(std::move(c), kRetryAfter);
  }
}

void ClusterSink::drop_pipeline(const std::string& node, const Status& why) {
  auto it = pipelines_.find(node);
  if (it == pipelines_.end()) return;
  std::vector<RoutedCommand> again = it->second.take_unanswered();
  pipelines_.erase(it);
  reconnects_++;
  map_stale_ = true;
  log::warn("lost cluster master " + node + ": " + why.message() + "; sending its " +
            std::to_string(again.size()) + " unanswered writes again by a fresh slot map");
  for (RoutedCommand& c : again) {
    resent_++;
    c.hops++;
    send_later(std::move(c), kRetryAfter);
  }
}

Status ClusterSink::step(Clock::time_point& last_answer) {
  auto now = Clock::now();
  const bool due = std::any_of(later_.begin(), later_.end(),
                               [&](const Later& l) { return l.due <= now; });
  if (due && map_stale_) {
    if (auto fresh = target_.refresh_map(); fresh.ok()) {
      map_ = std::move(*fresh);
      map_stale_ = false;
    }
  }
  if (due) {
    std::vector<Later> waiting;
    std::vector<RoutedCommand> now_due;
    for (Later& l : later_) {
      if (l.due <= now)
        now_due.push_back(std::move(l.command));
      else
        waiting.push_back(std::move(l));
    }
    later_ = std::move(waiting);
    for (RoutedCommand& c : now_due) route(std::move(c));
  }

  auto wait = target_.io_timeout() -
              std::chrono::duration_cast<std::chrono::milliseconds>(now - last_answer);
  if (!later_.empty()) wait = std::min(wait, kRetryAfter);
  if (wait.count() <= 0) {
    return Status::error("load into the target cluster",
                         "no answer from any master for " +
                             std::to_string(target_.io_timeout().count() / 1000) + " s; " +
                             std::to_string(keys_in_flight()) + " keys' writes unanswered")
        .as(ErrorKind::kUnavailable);
  }
  bool answered = false;
  Status s = poll_pipelines(
      pipelines_, wait,
      [this](const std::string& node, CommandOutcome o) { on_outcome(node, std::move(o)); },
      [this](const std::string& node, const Status& why) { drop_pipeline(node, why); }, answered);
  if (answered) last_answer = Clock::now();
  return s;
}

Status ClusterSink::pump(size_t max_in_flight, size_t max_held) {
  auto last_answer = Clock::now();
  while (in_flight() > max_in_flight || held_bytes() > max_held)
    RRS_RETURN_IF_ERROR(step(last_answer));
  return {};
}

Status ClusterSink::drain() {
  RRS_RETURN_IF_ERROR(send_msets());
  return pump(0, 0);
}

Status ClusterSink::finish() {
  for (const RecordFailure& f : invalid_)
    log::error("record " + std::to_string(f.index) + " not loaded: " + f.reason);
  for (const std::string& e : errors_) log::error(e);
  if (counts_.failed > errors_.size())
    log::error("... and " + std::to_string(counts_.failed - errors_.size()) + " more failures");
  return {};
}

Status ClusterSink::verdict() const {
  const uint64_t failed = counts().failed;
  if (failed == 0) return {};
  return Status::error("load the table into the cluster",
                       std::to_string(failed) + " of " +
                           std::to_string(info_->header.record_count) +
                           " records were not loaded (see above); the target is incomplete")
      .as(ErrorKind::kFailed);
}

LoadCounts ClusterSink::counts() const {
  LoadCounts c = counts_;
  c.failed += invalid_.size();
  return c;
}

std::string ClusterSink::summary_fields() const {
  return " source=" + config_.server.host + ":" + std::to_string(config_.server.port) +
         " masters=" + std::to_string(per_master_.size()) + " moved=" + std::to_string(moved_) +
         " asked=" + std::to_string(asked_) + " retried=" + std::to_string(retried_) +
         " resent=" + std::to_string(resent_) + " msets=" + std::to_string(msets_sent_) +
         " split=" + std::to_string(split_);
}

void ClusterSink::abandon(const Status&, uint64_t invalid_records, double seconds) {
  if (info_ == nullptr || (!loading_ && !target_.touched())) return;
  std::string held;
  for (const auto& [node, keys] : per_master_)
    held += (held.empty() ? "" : ", ") + node + ": " + std::to_string(keys);
  log::error(
      "the load from sidecar " + config_.server.host + ":" + std::to_string(config_.server.port) +
      " stopped after " + std::to_string(counts_.keys) + " " + of_table_keys(info_->header) +
      " (by master: " + (held.empty() ? "none" : held) + "); " + std::to_string(keys_in_flight()) +
      " more keys' writes were sent or queued but not answered and may also have been "
      "applied; run again with --flush to replace, or --merge to complete it");
  IncompleteReport r;
  r.target = "partial";
  r.counts = counts();
  r.counts.failed = counts_.failed + invalid_records;
  r.unacknowledged = keys_in_flight();
  r.table_keys = info_->header.record_count;
  r.seconds = seconds;
  r.epoch = info_->header.epoch;
  print_incomplete(r);
}

}  // namespace rrs
