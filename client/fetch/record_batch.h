// What the fetcher hands the loader: validated records whose key and payload
// point into read buffers, plus whatever keeps those buffers alive (dropping
// the batch returns them to the fetcher's pool).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace rrs {

struct Record {
  uint64_t index = 0;  // slot number, for error messages
  uint32_t db = 0;
  int64_t expire_at_ms = -1;
  std::string_view key;
  std::string_view payload;
};

struct RecordBatch {
  std::vector<Record> records;
  std::shared_ptr<void> keepalive;
};

// A record the fetcher could not validate even after re-reading it.
struct RecordFailure {
  uint64_t index = 0;
  std::string reason;
};

// How often a thread blocked on the pipeline wakes to run its idle duty
// (the fetcher: keepalives to the server).
inline constexpr std::chrono::milliseconds kIdleEvery{250};

// Bounded single-producer/single-consumer hand-off between the threads.
template <typename T>
class BlockingQueue {
 public:
  explicit BlockingQueue(size_t capacity) : capacity_(capacity) {}

  // False if the queue was cancelled (the consumer gave up). While it waits
  // for room, `idle` (if given) runs about every kIdleEvery, without the lock.
  bool push(T item, const std::function<void()>& idle = {}) {
    std::unique_lock lock(mu_);
    auto room = [&] { return items_.size() < capacity_ || cancelled_; };
    while (!not_full_.wait_for(lock, kIdleEvery, room))
      if (idle) {
        lock.unlock();
        idle();
        lock.lock();
      }
    if (cancelled_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  // nullopt once the queue is closed and drained, or cancelled.
  std::optional<T> pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_ || cancelled_; });
    if (cancelled_ || items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    items_.clear();
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  size_t capacity_;
  bool closed_ = false;
  bool cancelled_ = false;
};

}  // namespace rrs
