#include "common/transport/verbs/registration_worker.h"

namespace rrs::verbs {

Result<std::unique_ptr<RegistrationWorker>> RegistrationWorker::start(
    event_base* base, OnDone on_done, std::chrono::milliseconds test_delay) {
  std::unique_ptr<RegistrationWorker> w(new RegistrationWorker(std::move(on_done), test_delay));
  RRS_ASSIGN_OR_RETURN(w->mailbox_, LoopMailbox::create(base));
  w->thread_ = std::thread([raw = w.get()] { raw->run(); });
  return w;
}

RegistrationWorker::~RegistrationWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();  // not started: their PD references go now
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RegistrationWorker::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  ++in_flight_;
  wake_.notify_one();
}

void RegistrationWorker::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      // Tests only: as if pinning took this long; a stop cuts it short.
      if (test_delay_.count() > 0 && wake_.wait_for(lock, test_delay_, [&] { return stopping_; }))
        return;
    }
    // The slow part, with no lock held and nothing of the loop's touched.
    Result<Grant> grant = register_in_own_pd(job.table, std::move(job.pd));
    // std::function wants a copyable job: the result travels behind a shared_ptr.
    auto done = std::make_shared<Done>(Done{job.client, std::move(job.table), std::move(grant)});
    mailbox_->post([this, done] { deliver(std::move(*done)); });
  }
}

void RegistrationWorker::deliver(Done done) {
  --in_flight_;
  on_done_(std::move(done));
}

}  // namespace rrs::verbs
