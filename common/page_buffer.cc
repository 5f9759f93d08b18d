#include "common/page_buffer.h"

#include <sys/mman.h>

#include <utility>

namespace rrs {

Result<PageBuffer> PageBuffer::allocate(size_t bytes) {
  PageBuffer b;
  if (bytes == 0) return b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Status::from_errno("allocate " + std::to_string(bytes) + " bytes for the table");
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

PageBuffer::~PageBuffer() {
  if (data_) munmap(data_, size_);
}

PageBuffer::PageBuffer(PageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace rrs
