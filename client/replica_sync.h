// A full sync in replica mode (--mode replica): the target Redis is told
// REPLICAOF the client's own replica link, and is answered as a master would
// answer a new replica: +FULLRESYNC with the master's replication ID and the
// table's offset, then an RDB the client writes on the fly from the table's
// records (rdb::RdbWriter) while the next chunks are still being read. The
// target loads it at its native ingest speed, and ends up a real replica of
// the master's history at the table's offset.
//
//   connect target, check it  ->  open the table, start fetching
//   REPLICAOF <link>  ->  handshake, +FULLRESYNC <replid> <offset>, $EOF:<mark>
//   RDB: header, AUX, functions, per batch SELECTDB/keys  ->  EOF, CRC-64, mark
//   wait for the target's REPLCONF ACK <offset>: it has loaded the RDB
#pragma once

#include <optional>

#include "client/client_config.h"
#include "client/full_sync.h"
#include "client/replica_link.h"

namespace rrs {

// What follow mode and --handoff carry on with after a replica-mode sync.
struct ReplicaSynced {
  SyncedTable table;
  std::optional<ReplicaLink> link;  // the target's live link to the client
};

// Returns the process exit code and prints the summary. With `synced`, the
// link is left open for the caller; without it, a target synced from a psync
// table stays a replica whose master link is down (ready for REPLICAOF
// <master> to continue with a partial resync), and one synced from a scan
// table is detached (REPLICAOF NO ONE): it has no history to continue.
int run_replica_sync(const ClientConfig& config, ReplicaSynced* synced = nullptr);

// Logs what a target left as a replica of the client at `offset` is, and
// how to continue it or detach it.
void explain_left_replica(std::string_view replid, uint64_t offset);

}  // namespace rrs
