// A fixed set of equal read buffers carved from one page-aligned allocation,
// registered with the transport once. take() hands out a lease; dropping the
// last copy of the lease returns the buffer. Thread safe: the fetcher takes,
// the loader drops.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "client/fetch/record_batch.h"
#include "common/table/page_buffer.h"
#include "common/transport/transport.h"

namespace rrs {

class BufferPool {
 public:
  struct Lease {
    std::span<std::byte> bytes;
    std::shared_ptr<void> hold;  // returns the buffer when the last copy goes
    explicit operator bool() const { return hold != nullptr; }
  };

  static Result<std::unique_ptr<BufferPool>> create(TableReader& reader, size_t count,
                                                    size_t buffer_size);
  // Unregisters the memory from the reader, which must still exist.
  ~BufferPool();
  // Blocks until a buffer is free, running `idle` (if given) about every
  // kIdleEvery meanwhile; an empty lease once cancelled.
  Lease take(const std::function<void()>& idle = {});
  void cancel();
  size_t buffer_size() const { return buffer_size_; }

 private:
  BufferPool() = default;
  void put(size_t index);

  TableReader* reader_ = nullptr;
  PageBuffer memory_;
  size_t buffer_size_ = 0;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<size_t> free_;
  bool cancelled_ = false;
};

}  // namespace rrs
