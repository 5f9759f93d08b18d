// Snapshot the way a replica does: PSYNC ? -1, then parse the master's RDB as
// it streams in (no temp file) into the table builder. The table is then the
// keyspace exactly as of the replication offset in +FULLRESYNC, and the
// master's event loop only forks; its child writes the RDB.
//
// After the snapshot the source keeps the replication link, so the master
// sees a healthy replica, and appends the stream to the change log that
// continues the table (replicas follow it). If the link drops, it reconnects
// and asks to continue: the log goes on. When the master answers with a full
// resync instead, the new RDB becomes a new snapshot with a new log, while
// the current table is still served.
//
// Snapshots are taken when asked for (request_snapshot(): a client that no
// table fits, SIGUSR1), never on a timer unless `snapshot_every` says so:
// each one forks the master. Without a table yet, follow() waits for the
// first request before it opens any link. New epochs of the same history
// are taken on a second link, while the first keeps feeding the log; the new
// table continues in the same log, so followers carry on undisturbed.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>

#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"
#include "common/table/change_log.h"
#include "proto/rdb_parser.h"
#include "server/master_link.h"
#include "server/snapshot_source.h"

namespace rrs {

struct PsyncOptions {
  MasterLinkOptions link;
  rdb::Limits limits;
  // Waits between attempts after a transfer fails: doubling, up to the max.
  std::chrono::milliseconds retry_first{1000}, retry_max{30000};
  // Data bytes in the change log's ring (rdma-server --log-size); 0: keep no
  // log (replicas cannot follow).
  uint64_t log_capacity = 64u << 20;
  // Also take a new snapshot when the log has grown this much since the
  // current table (rdma-server --snapshot-every); 0 (default): only when
  // asked. Below the log's capacity when set.
  uint64_t snapshot_every = 0;
  // Tests only (rdma-server's $RRS_TEST_CORRUPT_LOG=N): flip the stream byte
  // N bytes into every new log once it is sealed, so tests can show followers
  // catch it. Never set in production.
  std::optional<uint64_t> corrupt_log_for_test;
  // Tests only ($RRS_TEST_NEW_HISTORY_VALUE_LIMIT=N): the RDB of a new
  // history (a full resync on reconnect) is parsed with values limited to N
  // bytes, so tests can show what an unparseable new history does.
  std::optional<uint64_t> new_history_value_limit_for_test;
};

// How snapshots taken while serving are handed over as they stream in
// (TableBuilder::stream): `opened` gets each new table once it is laid out,
// before its records; `broke` gets it if the snapshot then fails (its header
// already says so). Both on the source's threads.
struct StreamHooks {
  std::function<void(const std::shared_ptr<Table>&)> opened;
  std::function<void(const std::shared_ptr<Table>&)> broke;
};

class PsyncSource final : public SnapshotSource {
 public:
  PsyncSource(Endpoint master, RedisCredentials creds, PsyncOptions opts)
      : master_(std::move(master)), creds_(std::move(creds)), opts_(opts) {}

  // A full resync into `into`. A refused handshake fails at once (it will not
  // fix itself), and so does a source replica whose link to its master is
  // down on the first attempt; a transfer that breaks off is retried with
  // backoff.
  Result<SnapshotStats> snapshot(TableBuilder& into) override;
  // Whether the master can be snapshotted now (reachable, credentials
  // accepted, its role one we take a snapshot of), without asking for one:
  // checked at start when the first snapshot waits for a client.
  Status check_master() { return ready_source().status(); }

  // Without a table yet (no snapshot() before), first waits for a request
  // and takes the first snapshot, retrying with backoff while it fails (the
  // request stands), and hands it to `on_snapshot`. Then keeps the link
  // until `stop`: appends the stream to log(), acknowledges it, reconnects
  // when it drops. A full resync on reconnect builds into a
  // fresh builder, starts a new log, and hands both to `on_snapshot`; the
  // caller publishes them and supersedes the old log. New snapshots of the
  // same history (snapshot_every, request_snapshot()) are handed over the
  // same way, from a second thread, with the current log. Returns when
  // `stop` is set (ok), or with why it gave the link up (kBadData: a new
  // history's RDB it cannot read, or no log for it): the log then never
  // grows again.
  using OnSnapshot =
      std::function<void(TableBuilder&, const SnapshotStats&, const ChangeLogPtr& log)>;
  Status follow(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot);

  // From now on, snapshots stream (before follow()).
  void stream_tables(StreamHooks hooks) { hooks_ = std::move(hooks); }

  // The change log continuing the last snapshot (null with log_capacity 0).
  ChangeLogPtr log() const;

  // Asks for a new snapshot of the same history now (SIGUSR1, a client no
  // table fits). It stands until one is taken. Any thread.
  void request_snapshot() { snapshot_requested_ = true; }
  // Why the last attempt at a requested snapshot failed; empty once one
  // succeeds. Any thread.
  std::string last_failure() const;

 private:
  // snapshot(), stopping early (kUnavailable) when `stop` is set.
  Result<SnapshotStats> snapshot_until(TableBuilder& into, const std::atomic<bool>& stop);
  // follow() without a table: the first snapshot, when asked for.
  Status first_snapshot(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot);
  void set_failure(std::string why);
  // The source's role, read before each PSYNC; an error when it cannot
  // serve a snapshot now (a replica whose link is down: kUnavailable).
  Result<SourceRole> ready_source();
  // Reads the RDB announced by `reply` into `into`, within `limits`;
  // streamed (hooks_) as a table continued by `log`.
  Result<SnapshotStats> receive(MasterLink& link, const PsyncReply& reply, TableBuilder& into,
                                const std::atomic<bool>& stop, const rdb::Limits& limits,
                                const SourceRole& role, const ChangeLogPtr& log);
  // receive() without the streaming: the RDB into the builder.
  Result<SnapshotStats> parse_rdb(MasterLink& link, const PsyncReply& reply, TableBuilder& into,
                                  const std::atomic<bool>& stop, const rdb::Limits& limits,
                                  const SourceRole& role);
  // follow()'s replication link: the stream into the log, reconnects.
  Status follow_link(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot);
  // A full resync on follow()'s link: the new history's table and log,
  // handed to `on_snapshot`. kBadData: give the link up (asking again cannot
  // help); any other error: reconnect and ask again.
  Status adopt_new_history(MasterLink& link, const PsyncReply& reply, const SourceRole& role,
                           const std::atomic<bool>& stop, const OnSnapshot& on_snapshot);
  // follow()'s second thread: new snapshots of the current history, until
  // `stop` or until the link is given up.
  void refresh(const std::atomic<bool>& stop, const std::atomic<bool>& link_gone,
               const OnSnapshot& on_snapshot);
  // One new snapshot on a link of its own; an error says why it could not
  // be taken or no longer fits the log (the current table stays).
  Status take_fresh_snapshot(const ChangeLogPtr& current_log, const std::atomic<bool>& stop,
                             const OnSnapshot& on_snapshot);
  // Marks a streamed table broken (if one was handed over) and says so.
  void abandon(TableBuilder& builder, const std::string& why);
  // The change log for the stream that follows `reply`'s RDB.
  Result<ChangeLogPtr> new_log(const PsyncReply& reply);
  // Says `why` and that we retry, then sleeps for the backoff (waking early
  // on stop), which doubles each time up to retry_max.
  void back_off(const std::string& why, const std::atomic<bool>& stop);

  Endpoint master_;
  RedisCredentials creds_;
  PsyncOptions opts_;
  std::optional<MasterLink> link_;
  std::chrono::milliseconds backoff_{0};
  // The log, and the offset of the newest table it continues: replaced by
  // the follow() thread on a new history, read by the refresh thread.
  mutable std::mutex mu_;
  ChangeLogPtr log_;
  uint64_t table_offset_ = 0;
  std::string last_failure_;
  std::atomic<bool> snapshot_requested_{false};
  StreamHooks hooks_;
  // A streamed table's room is multiplied by this: doubled after a snapshot
  // that ran out of it, back to 1 after one that did not.
  uint32_t room_factor_ = 1;
};

}  // namespace rrs
