// Snapshot the way a replica does: PSYNC ? -1, then parse the master's RDB as
// it streams in (no temp file) into the table builder. The table is then the
// keyspace exactly as of the replication offset in +FULLRESYNC, and the
// master's event loop only forks; its child writes the RDB.
//
// After the snapshot the source keeps the replication link, so the master
// sees a healthy replica and the offset stays current (follow mode will
// apply the stream). If the link drops, it reconnects and asks to continue;
// when the master answers with a full resync instead, the new RDB becomes
// a new snapshot while the current table is still served.
#pragma once

#include <atomic>
#include <functional>
#include <optional>

#include "common/endpoint.h"
#include "common/redis_client.h"
#include "proto/rdb_parser.h"
#include "server/master_link.h"
#include "server/snapshot_source.h"

namespace rrs {

struct PsyncOptions {
  MasterLinkOptions link;
  rdb::Limits limits;
  // Waits between attempts after a transfer fails: doubling, up to the max.
  std::chrono::milliseconds retry_first{1000}, retry_max{30000};
};

class PsyncSource final : public SnapshotSource {
 public:
  PsyncSource(Endpoint master, RedisCredentials creds, PsyncOptions opts)
      : master_(std::move(master)), creds_(std::move(creds)), opts_(opts) {}

  // A full resync into `into`. A refused handshake fails at once (it will not
  // fix itself); a transfer that breaks off is retried with backoff.
  Result<SnapshotStats> snapshot(TableBuilder& into) override;

  // Keeps the link until `stop`: acknowledges the stream, reconnects when it
  // drops. A full resync on reconnect builds into a fresh builder and hands
  // it to `on_snapshot` (on this thread).
  using OnSnapshot = std::function<void(TableBuilder&, const SnapshotStats&)>;
  void follow(const std::atomic<bool>& stop, const OnSnapshot& on_snapshot);

 private:
  // Reads the RDB announced by `reply` into `into`.
  Result<SnapshotStats> receive(MasterLink& link, const PsyncReply& reply, TableBuilder& into,
                                const std::atomic<bool>& stop);
  // Says `why` and that we retry, then sleeps for the backoff (waking early
  // on stop), which doubles each time up to retry_max.
  void back_off(const std::string& why, const std::atomic<bool>& stop);

  Endpoint master_;
  RedisCredentials creds_;
  PsyncOptions opts_;
  std::optional<MasterLink> link_;
  std::chrono::milliseconds backoff_{0};
};

}  // namespace rrs
