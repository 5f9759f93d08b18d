// --handoff: the end of a replica-mode sync. The target is a replica of the
// client's link, holding the master's replication ID and an offset the
// client brought it to; pointed at the real master (REPLICAOF), it asks for
// a partial resync from that offset, and the master answers +CONTINUE when
// its backlog still reaches back that far.
//
//   target's offset O (INFO replication)  ->  master: same history, backlog
//   covers O+1? (else refuse, and say how big repl-backlog-size must be)
//   ->  the target's own backlog (INFO replication)  ->  REPLICAOF <master>
//   ->  link up to that host and port  ->  the target's backlog again: a
//   partial resync keeps it, a full one replaces it (judge_resync).
//
// The master's sync_partial_ok / sync_full count every replica's resyncs, so
// another replica's partial resync could hide the target's full one: they are
// printed, and consulted only when the target's backlog cannot tell.
#pragma once

#include <string_view>

#include "client/client_config.h"
#include "client/replica/replica_link.h"
#include "common/redis/redis_client.h"

namespace rrs {

// Prints `handoff ...` once the target's link to the master is up.
// `forwarded`: the stream position the client has given the target. A
// master whose backlog does not reach back far enough is kRefused; a
// handoff that ended in a full resync is kFailed.
Status hand_off(const ClientConfig& config, std::string_view replid, ReplicaLink& link,
                uint64_t forwarded);

// --handoff run again (a restarted container): true when the target already
// is a replica of --master with its link up, so there is nothing to do. A
// target that is anything else is synced as usual.
Result<bool> already_handed_off(const ClientConfig& config, const RedisCredentials& creds);

// How a replica's link to its master began, from the replica's own INFO
// replication before (`before`, when it held offset `offset`) and after the
// link came up (`after`). A partial resync (+CONTINUE) keeps the replica's
// backlog, which held byte `offset`; a full one replaces it with a new one
// that begins after the offset the master's RDB was taken at (>= offset + 1).
// A backlog that moved without being cut was replaced. kUnknown when the
// backlog cannot tell: it has been cut since, or it began right after
// `offset` and still does (nothing reached the replica past its own full
// sync: a partial resync, or a full one at that very offset).
enum class Resync { kPartial, kFull, kUnknown };
Resync judge_resync(std::string_view before, std::string_view after, uint64_t offset);

}  // namespace rrs
