// What the fetcher hands the loader: validated records whose key and payload
// point into read buffers, plus whatever keeps those buffers alive (dropping
// the batch returns them to the fetcher's pool).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
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

// Bounded single-producer/single-consumer hand-off between the threads.
template <typename T>
class BlockingQueue {
 public:
  explicit BlockingQueue(size_t capacity) : capacity_(capacity) {}

  // False if the queue was cancelled (the consumer gave up).
  bool push(T item) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_ || cancelled_; });
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
