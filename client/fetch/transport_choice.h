// Which transport a client uses, decided once per run and said out loud:
// --transport tcp|verbs is obeyed; auto takes verbs when a local RDMA device
// with an active port reaches the server and the server accepts RDMA
// connections, else TCP.
#pragma once

#include <memory>

#include "client/client_config.h"
#include "common/transport/transport.h"

namespace rrs {

// A reader connected to the server (retrying until `deadline`).
Result<std::unique_ptr<TableReader>> connect_transport(const ClientConfig& config,
                                                       Clock::time_point deadline);

}  // namespace rrs
