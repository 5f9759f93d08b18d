#include "client/fetch/buffer_pool.h"

namespace rrs {

Result<std::unique_ptr<BufferPool>> BufferPool::create(TableReader& reader, size_t count,
                                                       size_t buffer_size) {
  std::unique_ptr<BufferPool> pool(new BufferPool());
  auto mem = PageBuffer::allocate(count * buffer_size);
  if (!mem.ok()) return mem.status();
  pool->memory_ = std::move(*mem);
  pool->buffer_size_ = buffer_size;
  RRS_RETURN_IF_ERROR(reader.register_buffer(pool->memory_.span()));
  pool->reader_ = &reader;
  for (size_t i = count; i-- > 0;) pool->free_.push_back(i);
  return pool;
}

BufferPool::~BufferPool() {
  if (reader_) reader_->unregister_buffer(memory_.span());
}

BufferPool::Lease BufferPool::take(const std::function<void()>& idle) {
  std::unique_lock lock(mu_);
  auto ready = [&] { return !free_.empty() || cancelled_; };
  while (!freed_.wait_for(lock, kIdleEvery, ready))
    if (idle) {
      lock.unlock();
      idle();
      lock.lock();
    }
  if (cancelled_) return {};
  size_t i = free_.back();
  free_.pop_back();
  // The deleter runs on whichever thread drops the last copy. The pointer is
  // only a non-null token (the pool; never used through it): the deleter
  // returns buffer i.
  std::shared_ptr<void> hold(static_cast<void*>(this), [this, i](void*) { put(i); });
  return {memory_.span().subspan(i * buffer_size_, buffer_size_), std::move(hold)};
}

void BufferPool::put(size_t index) {
  std::lock_guard lock(mu_);
  free_.push_back(index);
  freed_.notify_one();
}

void BufferPool::cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  freed_.notify_all();
}

}  // namespace rrs
