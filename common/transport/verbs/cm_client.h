// The client's connection management (rdmacm): its event channel and cm_id,
// address and route resolution, the connect that waits for ESTABLISHED, and
// the CM events that end a connection later. Declared first in its owner, so
// it goes last (the cm_id after its QP, the channel after the cm_id).
#pragma once

#include <string>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/transport/verbs/owners.h"

namespace rrs::verbs {

class CmClient {
 public:
  // A fresh event channel (non-blocking) and cm_id, resolved to `server`
  // (address, then route; both done by `deadline`). kUnavailable when trying again later may help.
  Status resolve(const Endpoint& server, Clock::time_point deadline);
  // rdma_connect with `param`, then waits for ESTABLISHED (whose private
  // data is the server's accept). A reject is the server's ERROR.
  Result<CmEvent> connect(rdma_conn_param& param, Clock::time_point deadline);
  // Takes the CM events queued now; an error once the connection is gone.
  Status check_events();
  void disconnect() { rdma_disconnect(id_.get()); }
  // The cm_id, then the channel.
  void reset();

  rdma_cm_id* id() const { return id_.get(); }
  int fd() const { return channel_->fd; }

 private:
  Result<CmEvent> wait_event(rdma_cm_event_type want, Clock::time_point deadline);

  EventChannel channel_;
  CmId id_;
};

}  // namespace rrs::verbs
