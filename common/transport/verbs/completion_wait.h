// The one way a thread waits for completions (the client's: the server's
// loop never waits, it sweeps): take what the CQ holds; if that is not
// enough, arm the CQ and take once more (a completion may have landed before
// the arm); only then sleep in poll(2) on the completion channel and the CM
// channel. No busy-waiting, no lost wakeup.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/transport/verbs/owners.h"

namespace rrs::verbs {

// Calls `take()` (Result<bool>: true when the wait is over) until it says so,
// fails, or `deadline` passes (then returns `timed_out()`). Each sleep lasts
// at most `max_sleep`, so `take` also runs periodically (keepalives).
// `on_cm()` runs when the CM channel `cm_fd` is readable; its error ends the wait.
template <typename Take, typename OnCm, typename TimedOut>
Status wait_for_completions(CompletionQueue& cq, ibv_comp_channel* channel, int cm_fd,
                            Clock::time_point deadline, std::chrono::milliseconds max_sleep,
                            Take&& take, OnCm&& on_cm, TimedOut&& timed_out) {
  bool armed = false;
  for (;;) {
    Result<bool> done = take();
    if (!done.ok()) return done.status();
    if (*done) return {};
    if (!armed) {
      if (ibv_req_notify_cq(cq.get(), 0) != 0) return Status::from_errno("ibv_req_notify_cq");
      armed = true;
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return timed_out();
    left = std::min(left, max_sleep);
    pollfd fds[2] = {{channel->fd, POLLIN, 0}, {cm_fd, POLLIN, 0}};
    int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) return Status::from_errno("poll");
    if (fds[1].revents & POLLIN) RRS_RETURN_IF_ERROR(on_cm());
    if (fds[0].revents & POLLIN) {
      ibv_cq* ev_cq = nullptr;
      void* ctx = nullptr;
      while (ibv_get_cq_event(channel, &ev_cq, &ctx) == 0) cq.event_taken();
      armed = false;
    }
  }
}

}  // namespace rrs::verbs
