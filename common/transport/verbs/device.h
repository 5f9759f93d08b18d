// Questions about the local RDMA devices, asked before choosing a transport
// or registering memory, so failures are explained up front instead of
// surfacing as ENOMEM or ENODEV deep inside rdma-core.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/status.h"

namespace rrs {

// What was found when some RDMA device has a port in state ACTIVE ("rxe0
// port 1 is active"); else why not ("no RDMA devices", ...), kUnavailable.
Result<std::string> rdma_device_active();

// rdma_device_active()'s answer either way, for --version: the device
// found, or why none is ("no RDMA devices (TCP only)").
std::string rdma_availability();

// Which device reaches `host` when rdmacm can resolve an address and route
// to it through a local RDMA device (within about a second); else why not.
Result<std::string> rdma_can_reach(const std::string& host, uint16_t port);

// Checks that `bytes` can be pinned for registration: RLIMIT_MEMLOCK (unless
// the process has CAP_IPC_LOCK). The error says how to raise the limit.
// `limit_for_test`, when not 0, stands for RLIMIT_MEMLOCK (and no CAP_IPC_LOCK).
Status check_memlock(uint64_t bytes, uint64_t limit_for_test = 0);

}  // namespace rrs
