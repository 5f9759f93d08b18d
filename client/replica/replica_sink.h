// The replica load path (--mode replica): the target Redis is told
// REPLICAOF the client's own replica link, and is answered as a master would
// answer a new replica: +FULLRESYNC with the master's replication ID and the
// table's offset, then an RDB written on the fly from the table's records
// (RdbStreamer) while the next chunks are still being read. The target loads
// it at its native ingest speed, and ends up a real replica of the master's
// history at the table's offset.
//
//   connect target  ->  check it, listen  ->  (fetching)  ->  REPLICAOF <link>
//   ->  handshake, +FULLRESYNC <replid> <offset>, $EOF:<mark>
//   ->  RDB: header, AUX, functions, per batch SELECTDB/keys  ->  EOF, CRC-64, mark
//   ->  wait for the target's REPLCONF ACK <offset>: it has loaded the RDB
#pragma once

#include <optional>
#include <string>

#include "client/client_config.h"
#include "client/replica/rdb_streamer.h"
#include "client/replica/replica_link.h"
#include "client/replica/replica_target.h"
#include "client/sync/load_sink.h"

namespace rrs {

class ReplicaSink : public LoadSink {
 public:
  explicit ReplicaSink(const ClientConfig& config) : config_(config) {}

  Status connect() override;
  std::optional<ServerVersion> target() const override { return target_->server(); }
  Status check(const TableInfo& info) override;
  Status prepare(const TableInfo& info) override;
  Status load(const RecordBatch& batch) override;
  Status take_failures(const std::vector<RecordFailure>& failures) override;
  Status finish() override;
  void abandon(const Status& why, uint64_t invalid_records, double seconds) override;
  // Closes the link and detaches the target, which drops the transfer and
  // keeps what it held; the next attempt makes it a replica again.
  Status start_over() override;
  LoadCounts counts() const override;
  std::string summary_fields() const override;

  // After a sync: the target's live link to the client, for follow mode and
  // --handoff.
  ReplicaLink& link() { return *link_; }
  // After a sync nothing follows: a target synced from a table with a
  // place in the master's history (psync, or an RDB file with repl-id and
  // repl-offset) stays a replica whose master link is down (ready for
  // REPLICAOF <master> to continue with a partial resync), one synced from a
  // table without (scan, an RDB file without them) is detached (REPLICAOF
  // NO ONE): it has no history to continue.
  void leave_target();

 private:
  // The TLS the replica link answers with: a server context when the target
  // replicates over TLS, null when over plain TCP.
  Result<std::shared_ptr<const TlsContext>> link_tls();

  const ClientConfig& config_;
  // The fetched table's; valid until run_sync() returns (leave_target()
  // comes after it, and keeps what it needs in source_kind_).
  const TableInfo* info_ = nullptr;
  table::SourceKind source_kind_ = table::SourceKind::kScan;
  std::optional<ReplicaTarget> target_;
  std::optional<ReplicaLink> link_;
  std::optional<RdbStreamer> rdb_;
  bool has_history_ = false;
  std::string replid_;
  uint64_t offset_ = 0;
  // The table's DB list was not known at check(): each record's DB is
  // checked against the target's `databases` instead.
  bool check_each_db_ = false;
  int64_t db_checked_ = -1;
  bool attached_ = false;  // the target was told REPLICAOF the link
  bool loaded_ = false;    // it acknowledged the whole RDB
};

// Logs what a target left as a replica of the client at `offset` is, and
// how to continue it or detach it.
void explain_left_replica(std::string_view replid, uint64_t offset);

}  // namespace rrs
