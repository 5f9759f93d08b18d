// Which role the snapshot source has in its replication topology, read from
// INFO replication before each snapshot. A replica is a good source (its
// PSYNC answers with the master's replid and offsets, and the master never
// forks), but only while its link to the master is up: a replica that lost
// its master, or is still syncing with it, has nothing current to give.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/redis/redis_client.h"

namespace rrs {

struct SourceRole {
  enum Kind {
    kUnknown,  // INFO was refused (a user without +info) or is renamed
    kMaster,   // role:master
    kReplica,  // role:slave
  };
  Kind kind = kUnknown;
  std::string master;       // kReplica: "host:port" of its master, as it reports it
  std::string link_status;  // kReplica: master_link_status ("up", "down")
  bool syncing = false;     // kReplica: master_sync_in_progress (loading its master's RDB)

  // "master", "replica" or "-": the ready line's source_role=.
  const char* name() const;
};

// Parses INFO replication's text (no I/O).
SourceRole parse_source_role(std::string_view info);

// Asks `source` for INFO replication. A user without +info gives kUnknown
// (said at info level: the role cannot then be checked); any other failure
// is an error, kUnavailable when the source cannot be reached.
Result<SourceRole> read_source_role(const Endpoint& source, const RedisCredentials& creds);

// Ok unless `role` is a replica whose link to its master is not up (or that
// is still syncing): then kUnavailable naming the replica, its master, the
// link state, and what to do.
Status check_snapshot_source(const Endpoint& source, const SourceRole& role);

}  // namespace rrs
