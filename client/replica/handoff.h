// --handoff: the end of a replica-mode sync. The target is a replica of the
// client's link, holding the master's replication ID and an offset the
// client brought it to; pointed at the real master (REPLICAOF), it asks for
// a partial resync from that offset, and the master answers +CONTINUE when
// its backlog still reaches back that far.
//
//   target's offset O (INFO replication)  ->  master: same history, backlog
//   covers O+1? (else refuse, and say how big repl-backlog-size must be)
//   ->  master's sync_full / sync_partial_ok  ->  REPLICAOF <master>  ->
//   link up  ->  counters again: partial +1, full +0, or say it went wrong.
#pragma once

#include <string_view>

#include "client/client_config.h"
#include "client/replica/replica_link.h"

namespace rrs {

// Prints `handoff ...` once the target's link to the master is up.
// `forwarded`: the stream position the client has given the target. A
// master whose backlog does not reach back far enough is kRefused; a
// handoff that ended in a full resync is kFailed.
Status hand_off(const ClientConfig& config, std::string_view replid, ReplicaLink& link,
                uint64_t forwarded);

}  // namespace rrs
