// Process exit codes shared by rdma-server and rdma-client, so scripts can
// tell "fix your flags" from "the network is down" from "data was lost".
#pragma once

#include "common/base/status.h"

namespace rrs::exit_code {

inline constexpr int kOk = 0;           // every record loaded or knowingly skipped
inline constexpr int kPartial = 1;      // finished, but some records were not loaded
inline constexpr int kUsage = 2;        // bad flags or arguments
inline constexpr int kUnavailable = 3;  // sidecar or Redis unreachable, auth refused, timeout
inline constexpr int kBadData = 4;      // the table or a peer's messages failed validation
inline constexpr int kRefused = 5;      // the target cannot take the data as it is: not empty
                                        // (no --flush/--merge), or too old for the payloads

// The exit code for a run that failed with `s`. Only the programs' main()
// call this: every layer below returns a Status.
inline int for_status(const Status& s) {
  if (s.ok()) return kOk;
  switch (s.kind()) {
    case ErrorKind::kUnavailable:
    case ErrorKind::kDenied: return kUnavailable;
    case ErrorKind::kBadData: return kBadData;
    case ErrorKind::kRefused: return kRefused;
    case ErrorKind::kUsage: return kUsage;
    case ErrorKind::kFailed: break;
  }
  return kPartial;
}

}  // namespace rrs::exit_code
