// Questions about the local RDMA devices, asked before choosing a transport
// or registering memory, so failures are explained up front instead of
// surfacing as ENOMEM or ENODEV deep inside rdma-core.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/status.h"

namespace rrs {

// True if some RDMA device has a port in state ACTIVE; `why` says what was
// found either way ("rxe0 port 1 active", "no RDMA devices", ...).
bool rdma_device_active(std::string& why);

// True if rdmacm can resolve an address and route to `server` through a local
// RDMA device (within about a second); `why` explains a "no".
bool rdma_can_reach(const std::string& host, uint16_t port, std::string& why);

// Checks that `bytes` can be pinned for registration: RLIMIT_MEMLOCK (unless
// the process has CAP_IPC_LOCK). The error says how to raise the limit.
Status check_memlock(uint64_t bytes);

}  // namespace rrs
