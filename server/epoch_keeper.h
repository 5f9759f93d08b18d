// Which table rdma-server serves, and when it takes a new one. The keeper
// publishes every epoch on every transport, and decides, for each client
// that asks for the table, whether the published one fits or a snapshot must
// be taken: with --source psync a snapshot forks the master, so one is taken
// only when a client needs it (no table yet, or the change log has moved
// past the table), after a short gathering delay so that replicas arriving
// together share one fork, or on SIGUSR1. Once no client reads the table
// (followers read only the change log) for --table-retain, its memory is
// given back; the change log goes on, and the next client that needs a
// table asks for a new snapshot.
#pragma once

#include <event2/event.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/net/loop_mailbox.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"
#include "server/psync_source.h"
#include "server/snapshot_source.h"

namespace rrs {

// The table servers, by transport name ("tcp", "verbs").
using Servers = std::vector<std::pair<std::string, std::unique_ptr<TableServer>>>;

struct KeeperOptions {
  // --snapshot-delay: how long after the first client asks the master is
  // asked, so that clients arriving together share one snapshot.
  std::chrono::milliseconds gather_delay{3000};
  // --table-retain: how long a table no client reads is kept (psync);
  // nullopt: for as long as it is served.
  std::optional<std::chrono::seconds> table_retain = std::chrono::seconds(60);
};

// Loop thread, except where a method says otherwise.
class EpochKeeper final : public TableDemand {
 public:
  EpochKeeper(event_base* base, KeeperOptions opts) : base_(base), opts_(opts) {}
  EpochKeeper(const EpochKeeper&) = delete;
  EpochKeeper& operator=(const EpochKeeper&) = delete;
  ~EpochKeeper() override { stop(); }

  // Takes the first snapshot from `source` now, publishes it on `servers`
  // and prints the ready line (--snapshot-at-start, and the sources that do
  // not fork: scan, rdb).
  Status publish_first(SnapshotSource& source, Servers& servers);
  // No table yet: prints the ready line without one; the first client that
  // asks for the table starts the first snapshot.
  Status serve_on_demand(Servers& servers);
  // PSYNC: follows the master on a thread of its own (psync.follow), which
  // takes the snapshots asked for and appends the stream to the change log.
  Status follow(PsyncSource& psync);
  // SIGUSR1: a new snapshot now, without the gathering delay.
  void snapshot_now();
  // Why serving stopped early: the change log can no longer grow.
  const Status& failure() const { return failure_; }
  void stop();

  // TableDemand, asked by the transports before they hand out the table.
  std::optional<Refusal> refuse(const TablePtr& table) override;

 private:
  // Whether a new client may start from `t`: the change log, when there is
  // one, must still hold the stream from the table's offset on.
  static bool fits(const Table& t);
  // Asks the source for a snapshot (after the delay, or now).
  void ask(const std::string& why, std::chrono::milliseconds delay);
  static void on_delay_over(evutil_socket_t, short, void* self);
  // What a client waiting for the snapshot is told.
  std::string progress() const;
  // On the follow thread: build, then hand the table to the loop thread.
  void on_new_snapshot(TableBuilder& next, const SnapshotStats& stats, const ChangeLogPtr& log);
  // A snapshot laid out and still streaming in: served at once by the
  // transports that can (TableServer::streams), the others get it complete.
  void serve_streamed(const TablePtr& table);
  // It broke off: those transports go back to the table they had.
  void withdraw_streamed(const TablePtr& table);
  void publish(const TablePtr& table, const SnapshotStats& stats, double build_s);
  // The current log will never grow again: exit (4) rather than serve a
  // table of a history the link has left.
  void fail(const Status& why);
  // Every second: gives the table back once it has had no reader for
  // --table-retain.
  static void on_retention_tick(evutil_socket_t, short, void* self);
  void give_back_if_unread();

  event_base* base_;
  KeeperOptions opts_;
  Servers* servers_ = nullptr;
  PsyncSource* psync_ = nullptr;
  Status failure_;
  TablePtr current_;
  // The streamed epoch being built and served by the transports that can.
  TablePtr streaming_;
  // A snapshot asked for and not yet published: since when.
  std::optional<Clock::time_point> asked_at_;
  // The last time the current table was read, handed out, asked for or
  // published.
  Clock::time_point last_read_ = Clock::now();
  std::unique_ptr<event, void (*)(event*)> retention_timer_{nullptr, event_free};
  std::unique_ptr<event, void (*)(event*)> delay_timer_{nullptr, event_free};
  std::atomic<bool> stop_{false};
  std::unique_ptr<LoopMailbox> mailbox_;
  std::thread thread_;
};

}  // namespace rrs
