#include "server/psync_source.h"

#include <charconv>
#include <thread>

#include "common/base/clock.h"
#include "common/base/log.h"
#include "server/cluster_shard.h"
#include "server/dataset_hint.h"
#include "server/rdb_table_sink.h"
#include "server/server_metrics.h"
#include "server/server_readiness.h"

namespace rrs {

namespace {

// Before the first snapshot: how often the master is looked at for /readyz.
constexpr auto kMasterCheckEvery = std::chrono::seconds(2);

// The DB the source's stream has selected at the RDB's offset: a master's
// stream after a full sync begins with a SELECT, but a replica passes its
// master's stream on as it is, in whatever DB that had selected, which the
// replica's RDB names (repl-stream-db). 0 when absent, of another history,
// or not a DB number.
uint32_t stream_db_of(const RdbReplAux& aux, const PsyncReply& reply) {
  if (aux.stream_db.empty() || aux.replid != reply.replid) return 0;
  uint32_t db = 0;
  const char* end = aux.stream_db.data() + aux.stream_db.size();
  auto [p, ec] = std::from_chars(aux.stream_db.data(), end, db);
  if (ec != std::errc() || p != end || db >= table::kMaxDbCount) {
    log::warn("the source's RDB names repl-stream-db '" + log::printable(aux.stream_db) +
              "', not a DB number; taking DB 0");
    return 0;
  }
  return db;
}

}  // namespace

void PsyncSource::back_off(const std::string& why, const std::atomic<bool>& stop) {
  backoff_ = backoff_.count() == 0 ? opts_.retry_first : std::min(backoff_ * 2, opts_.retry_max);
  log::warn(why + "; retrying in " +
            std::to_string(static_cast<double>(backoff_.count()) / 1000).substr(0, 4) + " s");
  auto until = Clock::now() + backoff_;
  while (!stop.load() && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

Result<SnapshotStats> PsyncSource::snapshot(TableBuilder& into) {
  static const std::atomic<bool> never{false};
  return snapshot_until(into, never);
}

Result<SnapshotStats> PsyncSource::snapshot_until(TableBuilder& into,
                                                  const std::atomic<bool>& stop) {
  for (int attempt = 1;; ++attempt) {
    if (stop.load()) return Status::error("snapshot", "stopping").as(ErrorKind::kUnavailable);
    link_.reset();
    auto link = MasterLink::connect(master_, creds_, opts_.link);
    if (!link.ok()) {
      // Unreachable at start: say so now. Gone mid-RDB: it may be restarting.
      if (attempt == 1 || link.status().kind() != ErrorKind::kUnavailable)
        return link.status().wrap("connect to master for PSYNC");
      back_off("snapshot attempt " + std::to_string(attempt) + ": " + link.status().message(),
               stop);
      continue;
    }
    // A replica without its master at start: say why now (exit 3), rather
    // than wait in silence; later it may be a moment's outage.
    auto role = ready_source();
    if (!role.ok()) {
      if (attempt == 1) return role.status();
      back_off("snapshot attempt " + std::to_string(attempt) + ": " + role.status().message(),
               stop);
      continue;
    }
    auto reply = link->psync("?", -1);
    if (!reply.ok()) return reply.status();
    if (reply->kind != PsyncReply::kFull) {
      back_off(reply->why, stop);
      continue;
    }
    into = TableBuilder();  // nothing from a broken attempt survives
    auto log = new_log(*reply);
    if (!log.ok()) return log.status();
    auto stats = receive(*link, *reply, into, stop, opts_.limits, *role, *log);
    if (stats.ok()) {
      std::lock_guard lock(mu_);
      log_ = std::move(*log);
      table_offset_ = reply->offset;
      link_ = std::move(*link);
      backoff_ = std::chrono::milliseconds(0);
      return stats;
    }
    // A master that went away mid-RDB may come back; bytes we cannot parse
    // will not get better by asking the master to fork again.
    if (stats.status().kind() != ErrorKind::kUnavailable) return stats.status();
    back_off("snapshot attempt " + std::to_string(attempt) + " failed: " + stats.status().message(),
             stop);
  }
}

Result<SourceRole> PsyncSource::ready_source() {
  RRS_ASSIGN_OR_RETURN(SourceRole role, read_source_role(master_, creds_));
  RRS_RETURN_IF_ERROR(check_snapshot_source(master_, role));
  return role;
}

Result<SnapshotStats> PsyncSource::receive(MasterLink& link, const PsyncReply& reply,
                                           TableBuilder& into, const std::atomic<bool>& stop,
                                           const rdb::Limits& limits, const SourceRole& role,
                                           const ChangeLogPtr& log) {
  if (!hooks_.opened) return parse_rdb(link, reply, into, stop, limits, role);
  // Streamed: the table goes out as soon as it is laid out, in room sized
  // from what the master holds.
  const DatasetHint hint = read_dataset_hint(master_, creds_);
  into.stream({.epoch = static_cast<uint64_t>(unix_ms()),
               .keys_hint = hint.keys,
               .bytes_hint = hint.bytes,
               .room_factor = room_factor_,
               .on_open = [this, log](const std::shared_ptr<Table>& t) {
                 t->log = log;
                 log::info("epoch " + std::to_string(t->epoch()) +
                           " is served while it is built (streamed)");
                 hooks_.opened(t);
               }});
  auto stats = parse_rdb(link, reply, into, stop, limits, role);
  if (stats.ok()) {
    room_factor_ = 1;
    return stats;
  }
  if (into.out_of_room()) room_factor_ = std::min<uint32_t>(room_factor_ * 2, 64);
  abandon(into, stats.status().message());
  return stats;
}

void PsyncSource::abandon(TableBuilder& builder, const std::string& why) {
  if (std::shared_ptr<Table> broken = builder.abandon(why)) {
    log::warn("epoch " + std::to_string(broken->epoch()) + " broke off while it was built: " + why);
    hooks_.broke(broken);
  }
}

Result<SnapshotStats> PsyncSource::parse_rdb(MasterLink& link, const PsyncReply& reply,
                                             TableBuilder& into, const std::atomic<bool>& stop,
                                             const rdb::Limits& limits, const SourceRole& role) {
  const auto t0 = Clock::now();
  // The shard's slots as the master takes its snapshot (it forks for a
  // diskless sync after this answer, for a disk-based one an instant
  // before), and again once the RDB is in: the table carries them only if
  // no slot moved in between. Read before the line below, which tests wait
  // for to move a slot.
  const std::optional<SlotRanges> slots_before = read_shard_slots(master_, creds_);
  log::info("master " + master_.to_string() + " began a full resync: replid " + reply.replid +
            " offset " + std::to_string(reply.offset) + "; parsing its RDB as it streams in");
  // A streamed table carries the slots as of its start; a slot that moves
  // meanwhile fails the snapshot below.
  into.set_hash_slots(slots_before);
  rdb::RdbParser parser(limits);
  RdbTableSink sink(into, parser,
                    {"the master's RDB", "a snapshot is taken once the migration has finished",
                     ErrorKind::kUnavailable},
                    [&link] { return link.rdb_size(); });
  auto describe = [&reply, &sink] {
    SourceInfo source{{}, table::SourceKind::kPsync, reply.offset, reply.replid};
    source.stream_db = stream_db_of(sink.repl_aux(), reply);
    return source;
  };
  sink.describe_at_first_key(describe);
  Status s = link.receive_rdb(
      parser, [&sink](const rdb::Event& ev) { return sink.on_event(ev); }, stop);
  if (!s.ok()) {
    if (parser.consumed() > 0)
      return s.wrap("after " + mib(parser.consumed()) + " of the RDB and " +
                    std::to_string(sink.stats().keys) + " keys");
    return s;
  }
  SnapshotStats stats = sink.finish(describe());
  stats.source_role = role;
  stats.rdb_seconds = seconds_since(t0);
  stats.hash_slots = read_shard_slots(master_, creds_);
  if (stats.hash_slots != slots_before)
    return Status::error("snapshot " + master_.to_string(),
                         "the shard's slots changed while its RDB streamed in (from " +
                             slots_text(slots_before) + " to " + slots_text(stats.hash_slots) +
                             "): a slot migration is under way, so the table could hold keys "
                             "its shard no longer serves; a snapshot is taken again")
        .as(ErrorKind::kUnavailable);
  into.set_hash_slots(stats.hash_slots);
  log::info("snapshot: RDB complete: " + mib(stats.rdb_bytes) + ", " + std::to_string(stats.keys) +
            " keys in " + std::to_string(sink.seconds()).substr(0, 5) +
            " s; the table is the keyspace as of offset " + std::to_string(reply.offset));
  return stats;
}

ChangeLogPtr PsyncSource::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

std::string PsyncSource::last_failure() const {
  std::lock_guard lock(mu_);
  return last_failure_;
}

void PsyncSource::set_failure(std::string why) {
  std::lock_guard lock(mu_);
  last_failure_ = std::move(why);
}

void PsyncSource::refresh(const std::atomic<bool>& stop, const std::atomic<bool>& link_gone,
                          const OnSnapshot& on_snapshot) {
  auto pause = opts_.retry_first;
  while (!stop.load() && !link_gone.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ChangeLogPtr current_log;
    uint64_t grown = 0;
    {
      std::lock_guard lock(mu_);
      if (!log_) continue;
      current_log = log_;
      grown = current_log->end() - table_offset_;
    }
    const bool asked = snapshot_requested_.exchange(false);
    if (!asked && (opts_.snapshot_every == 0 || grown < opts_.snapshot_every)) continue;
    log::info(std::string(asked ? "new snapshot requested"
                                : "the change log has grown " + mib(grown) + " past the table") +
              "; taking a new snapshot on a second link while the log goes on");
    const Status taken = take_fresh_snapshot(current_log, stop, on_snapshot);
    if (taken.ok()) {
      set_failure("");
      pause = opts_.retry_first;
      continue;
    }
    log::warn(taken.message());
    set_failure(taken.message());
    // A request stands until a snapshot is taken (e.g. after a source
    // replica's link is back); do not make the master fork again at once.
    if (asked) snapshot_requested_ = true;
    for (auto until = Clock::now() + pause; !stop.load() && Clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pause = std::min(pause * 2, opts_.retry_max);
  }
}

Status PsyncSource::take_fresh_snapshot(const ChangeLogPtr& current_log,
                                        const std::atomic<bool>& stop,
                                        const OnSnapshot& on_snapshot) {
  const std::string step = "new snapshot";
  auto link = MasterLink::connect(master_, creds_, opts_.link);
  if (!link.ok()) return link.status().wrap(step);
  auto role = ready_source();
  if (!role.ok()) return role.status().wrap(step);
  auto asked = link->psync("?", -1);
  if (!asked.ok()) return asked.status().wrap(step);
  const PsyncReply& reply = *asked;
  if (reply.kind != PsyncReply::kFull) return Status::error(step, reply.why);
  // The table must be continued by this log: the same history (checked
  // first, so that a table of another history is never served with it).
  if (reply.replid != current_log->replid())
    return Status::error(step, "the master's replid is now " + reply.replid +
                                   ", not the log's; the first link will see the new history");
  TableBuilder builder;
  auto stats = receive(*link, reply, builder, stop, opts_.limits, *role, current_log);
  if (!stats.ok())
    return Status::error(step + " failed", stats.status().message() + " (the current table stays)");
  // And a position the log reaches (the first link may be a moment behind).
  auto drop = [&](const std::string& why) {
    abandon(builder, why);
    return Status::error(step, why);
  };
  for (auto until = Clock::now() + opts_.link.repl_timeout; current_log->end() < reply.offset;) {
    if (stop.load() || Clock::now() >= until)
      return drop("the change log did not reach its offset " + std::to_string(reply.offset));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  {
    std::lock_guard lock(mu_);
    if (log_ != current_log || current_log->start() > reply.offset)
      return drop("the change log moved on meanwhile; dropping it");
    table_offset_ = reply.offset;
  }
  on_snapshot(builder, *stats, current_log);
  return {};
}

Result<ChangeLogPtr> PsyncSource::new_log(const PsyncReply& reply) {
  if (opts_.log_capacity == 0) return ChangeLogPtr();
  // The id only has to differ from every earlier log's, across restarts too.
  auto log = ChangeLog::create(opts_.log_capacity, static_cast<uint64_t>(unix_us()), reply.replid,
                               reply.offset);
  if (opts_.corrupt_log_for_test && log.ok()) {
    const uint64_t at = reply.offset + *opts_.corrupt_log_for_test;
    (*log)->corrupt_after_sealing_for_test(at);
    log::warn("RRS_TEST_CORRUPT_LOG: the change log's byte at offset " + std::to_string(at) +
              " will be flipped after it is sealed (a test hook; unset it)");
  }
  return log;
}

Status PsyncSource::first_snapshot(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot) {
  auto pause = opts_.retry_first;
  auto checked = Clock::now();
  while (!stop.load()) {
    if (!snapshot_requested_.exchange(false)) {
      // No link is held before the first snapshot: a look now and then, so
      // /readyz says when a request could not be answered.
      if (Clock::now() - checked >= kMasterCheckEvery) {
        const Status up = check_master();
        server_readiness().master_link(up.ok(), up.message());
        checked = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    log::info("a snapshot was asked for: the master forks now (PSYNC ? -1)");
    TableBuilder builder;
    auto stats = snapshot_until(builder, stop);
    if (stats.ok()) {
      set_failure("");
      server_readiness().master_link(true);
      on_snapshot(builder, *stats, log());
      return {};
    }
    if (stop.load()) return {};
    // Bytes we cannot parse will not get better by making the master fork again.
    if (stats.status().kind() == ErrorKind::kBadData)
      return stats.status().wrap("the snapshot asked for");
    // The request stands: the next attempt comes after a pause that doubles,
    // so an unreachable master is not asked again at once.
    log::warn("the snapshot asked for failed: " + stats.status().message() + "; retrying in " +
              std::to_string(pause.count() / 1000) + " s");
    set_failure(stats.status().message());
    server_readiness().master_link(false, stats.status().message());
    snapshot_requested_ = true;
    for (auto until = Clock::now() + pause; !stop.load() && Clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pause = std::min(pause * 2, opts_.retry_max);
  }
  return {};
}

Status PsyncSource::follow(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot) {
  if (!link_) {
    RRS_RETURN_IF_ERROR(first_snapshot(stop, on_snapshot));
    if (stop.load()) return {};
  }
  std::atomic<bool> link_gone{false};
  std::thread refresher([&] { refresh(stop, link_gone, on_snapshot); });
  Status s = follow_link(stop, on_snapshot);
  link_gone = true;
  refresher.join();
  return s;
}

Status PsyncSource::follow_link(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot) {
  std::string replid = link_ ? link_->replid() : "?";
  uint64_t offset = link_ ? link_->offset() : 0;
  std::string last_failure = "reconnecting to master " + master_.to_string();
  bool renamed = false;  // the source continued under a new replid: ask for its RDB
  while (!stop.load()) {
    if (link_) {
      ChangeLogPtr current_log = log();
      server_metrics().master_link_up.set(1);
      server_readiness().master_link(true);
      Status s = link_->follow(stop, [&](std::span<const std::byte> bytes) {
        if (current_log) current_log->append(bytes);
        server_metrics().master_offset.set(static_cast<double>(link_->offset() + bytes.size()));
      });
      server_metrics().master_link_up.set(0);
      replid = link_->replid();
      offset = link_->offset();
      link_.reset();
      if (stop.load()) return {};
      log::warn("replication link lost: " + s.message() + " (the current table stays served)");
      server_readiness().master_link(false, "replication link lost: " + s.message());
    }
    back_off(last_failure, stop);
    if (stop.load()) return {};
    auto link = MasterLink::connect(master_, creds_, opts_.link);
    if (!link.ok()) {
      last_failure = link.status().message();
      continue;
    }
    auto role = ready_source();
    if (!role.ok()) {
      last_failure = role.status().message();
      continue;
    }
    auto reply = renamed ? link->psync("?", -1)
                         : link->psync(replid, static_cast<int64_t>(offset + 1));
    if (!reply.ok() || reply->kind == PsyncReply::kNotReady) {
      last_failure = reply.ok() ? reply->why : reply.status().message();
      continue;
    }
    if (reply->kind == PsyncReply::kContinue && reply->replid != replid) {
      // psync2 after a failover or a promotion: the stream goes on, but under
      // a new history our table and log do not carry (a handoff would ask
      // with the old replid past the point the new master still accepts it).
      last_failure = "the source continued under a new replication ID " + reply->replid +
                     " (a failover or promotion); asking for a full resync of the new history";
      renamed = true;
      continue;
    }
    if (reply->kind == PsyncReply::kContinue) {
      log::info("master continued the stream at offset " + std::to_string(offset) +
                " (partial resync); the table and its change log go on");
    } else if (Status s = adopt_new_history(*link, *reply, *role, stop, on_snapshot); !s.ok()) {
      if (s.kind() == ErrorKind::kBadData) return s;
      last_failure = s.message();
      continue;
    }
    renamed = false;
    link_ = std::move(*link);
    backoff_ = std::chrono::milliseconds(0);
    last_failure = "reconnecting to master " + master_.to_string();
  }
  return {};
}

Status PsyncSource::adopt_new_history(MasterLink& link, const PsyncReply& reply,
                                      const SourceRole& role, const std::atomic<bool>& stop,
                                      const OnSnapshot& on_snapshot) {
  log::info("master answered with a full resync; building a new table while the current "
            "one is served");
  TableBuilder builder;
  rdb::Limits limits = opts_.limits;
  if (opts_.new_history_value_limit_for_test)
    limits.max_value_bytes = limits.max_string_bytes = *opts_.new_history_value_limit_for_test;
  auto log = new_log(reply);
  if (!log.ok()) return log.status().wrap("new history's change log").as(ErrorKind::kBadData);
  auto stats = receive(link, reply, builder, stop, limits, role, *log);
  if (!stats.ok() && stats.status().kind() == ErrorKind::kBadData) {
    // Asking again would only make the master fork for the same bytes.
    return stats.status().wrap("new snapshot of the master's new history");
  }
  if (!stats.ok()) return Status::error("new snapshot failed", stats.status().message());
  {
    std::lock_guard lock(mu_);
    log_ = *log;
    table_offset_ = reply.offset;
  }
  on_snapshot(builder, *stats, *log);
  return {};
}

}  // namespace rrs
