// Hands work from another thread to the libevent loop, which alone may touch
// the table servers: rdma-server publishes (and announces) a new epoch built
// after the master asked for a full resync from here, and the verbs server
// takes a client's finished registration (verbs/registration_worker.h). A
// pipe wakes the loop. Jobs not run when the mailbox goes are dropped with it.
#pragma once

#include <event2/event.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "common/base/status.h"
#include "common/net/socket.h"

namespace rrs {

class LoopMailbox {
 public:
  using Job = std::function<void()>;
  static Result<std::unique_ptr<LoopMailbox>> create(event_base* base);
  ~LoopMailbox();

  // Any thread: `job` runs on the loop thread, in the order posted.
  void post(Job job);

 private:
  LoopMailbox() = default;
  static void on_wake(evutil_socket_t fd, short, void* self);

  UniqueFd read_end_, write_end_;
  event* event_ = nullptr;
  std::mutex mu_;
  std::deque<Job> jobs_;
};

}  // namespace rrs
