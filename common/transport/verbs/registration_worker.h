// The PD-per-client fallback's registrations, off the event loop. Without
// memory windows each authenticated client gets the epoch's table and log
// registered again in a protection domain of its own (verbs/protection.h,
// kPdPerClient), and ibv_reg_mr pins every page: seconds for a table of many
// GiB. On the loop thread that would stall every other client's handshake,
// AUTH and keepalives meanwhile, so one worker thread registers them, one at
// a time in the order asked, and hands each result back to the loop through
// a LoopMailbox of its own.
//
// A job owns what the registration needs (the table, a reference to the
// client's PD), so it never touches the client's connection: the result
// names the client by its serial, and the loop looks it up, finding nothing
// when the client went meanwhile; the result's MRs are then released with it
// (before the PD, which the last of connection and result frees). Destroying
// the worker joins its thread: a registration under way finishes first, the
// ones not started are dropped, and every result not yet taken is released.
#pragma once

#include <event2/event.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/base/status.h"
#include "common/net/loop_mailbox.h"
#include "common/table/table.h"
#include "common/transport/verbs/protection.h"

namespace rrs::verbs {

class RegistrationWorker {
 public:
  // One client's registration: `table` (and its log) in the client's own `pd`.
  struct Job {
    uint64_t client = 0;  // the connection's serial (VerbsTableServer)
    TablePtr table;
    SharedProtectionDomain pd;
  };
  // Its outcome, on the loop thread: the grant (holding the MRs, the table
  // they pin and the PD), or why the registration failed.
  struct Done {
    uint64_t client = 0;
    TablePtr table;
    Result<Grant> grant;
  };
  using OnDone = std::function<void(Done)>;

  // `on_done` runs on `base`'s loop thread, once per job, in order.
  // `test_delay` (tests only) lengthens every registration, and is cut short
  // when the worker stops.
  static Result<std::unique_ptr<RegistrationWorker>> start(event_base* base, OnDone on_done,
                                                           std::chrono::milliseconds test_delay);
  ~RegistrationWorker();
  RegistrationWorker(const RegistrationWorker&) = delete;
  RegistrationWorker& operator=(const RegistrationWorker&) = delete;

  // Loop thread: queues `job`.
  void submit(Job job);
  // Loop thread: jobs submitted whose result the loop has not taken yet.
  size_t in_flight() const { return in_flight_; }

 private:
  RegistrationWorker(OnDone on_done, std::chrono::milliseconds test_delay)
      : on_done_(std::move(on_done)), test_delay_(test_delay) {}
  void run();
  // The loop thread takes one result.
  void deliver(Done done);

  OnDone on_done_;
  std::chrono::milliseconds test_delay_;
  size_t in_flight_ = 0;  // loop thread only
  // Destroyed after the thread is joined (the destructor's body): results
  // not yet taken go with it, their MRs released.
  std::unique_ptr<LoopMailbox> mailbox_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rrs::verbs
