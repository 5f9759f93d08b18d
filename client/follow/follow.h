// Follow mode (--follow): a full sync, then the master's replication stream
// from the sidecar's change log, applied to the target until SIGINT/SIGTERM.
//
//   sync table at offset X  ->  tail the log from X: header, new bytes,
//   header again (seqlock check), parse RESP, apply, repeat; idle: back off.
//
// The stream is only ever applied to the snapshot it continues: the log must
// carry the table's replid and still hold position X. When it does not (the
// follower fell behind the ring, the sidecar restarted, the master began a
// new history), the client says why and resyncs from the newest table.
#pragma once

#include "client/client_config.h"

namespace rrs {

// Returns ok after a signal (or a handoff), else why it could not go on.
Status run_follow(const ClientConfig& config);

}  // namespace rrs
