#include "common/net/loop_mailbox.h"

#include <fcntl.h>
#include <unistd.h>

namespace rrs {

Result<std::unique_ptr<LoopMailbox>> LoopMailbox::create(event_base* base) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return Status::from_errno("pipe for the loop");
  std::unique_ptr<LoopMailbox> box(new LoopMailbox());
  box->read_end_ = UniqueFd(fds[0]);
  box->write_end_ = UniqueFd(fds[1]);
  box->event_ = event_new(base, fds[0], EV_READ | EV_PERSIST, on_wake, box.get());
  if (!box->event_ || event_add(box->event_, nullptr) != 0)
    return Status::error("mailbox event", "libevent refused it");
  return box;
}

LoopMailbox::~LoopMailbox() {
  if (event_) event_free(event_);
}

void LoopMailbox::post(Job job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  char one = 1;
  (void)!::write(write_end_.get(), &one, 1);  // a full pipe already means "wake up"
}

void LoopMailbox::on_wake(evutil_socket_t fd, short, void* self) {
  auto* box = static_cast<LoopMailbox*>(self);
  char drain[64];
  while (::read(fd, drain, sizeof drain) > 0) {
  }
  std::deque<Job> jobs;
  {
    std::lock_guard lock(box->mu_);
    jobs.swap(box->jobs_);
  }
  for (Job& job : jobs) job();
}

}  // namespace rrs
