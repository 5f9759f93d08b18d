// Hands tables built on another thread (a new snapshot after the master
// asked for a full resync) to the libevent loop, which alone may publish.
// A pipe wakes the loop; only the newest table waiting is delivered.
#pragma once

#include <event2/event.h>

#include <functional>
#include <mutex>

#include "common/socket.h"
#include "common/status.h"
#include "common/table.h"

namespace rrs {

class TableMailbox {
 public:
  using Deliver = std::function<void(TablePtr)>;
  static Result<std::unique_ptr<TableMailbox>> create(event_base* base, Deliver deliver);
  ~TableMailbox();

  // Any thread.
  void post(TablePtr table);

 private:
  TableMailbox(Deliver deliver) : deliver_(std::move(deliver)) {}
  static void on_wake(evutil_socket_t fd, short, void* self);

  Deliver deliver_;
  UniqueFd read_end_, write_end_;
  event* event_ = nullptr;
  std::mutex mu_;
  TablePtr pending_;
};

}  // namespace rrs
