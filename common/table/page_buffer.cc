#include "common/table/page_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <utility>

#include "common/table/huge_pages.h"

namespace rrs {
namespace {
constexpr size_t kPage = 4096;
}  // namespace

Result<PageBuffer> PageBuffer::map_pages(size_t bytes, int extra_flags) {
  PageBuffer b;
  if (bytes == 0) return b;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags,
                 -1, 0);
  if (p == MAP_FAILED)
    return Status::from_errno("allocate " + std::to_string(bytes) + " bytes for the table" +
                              (extra_flags & MAP_NORESERVE
                                   ? " (address space only; vm.overcommit_memory=2 refuses it)"
                                   : ""));
  // Huge pages where the kernel has them (THP "madvise" mode is Debian's
  // default) and they pay off (huge_pages.h). Best effort.
  if (huge_pages_on()) madvise(p, bytes, MADV_HUGEPAGE);
  b.data_ = static_cast<std::byte*>(p);
  b.size_ = bytes;
  return b;
}

Result<PageBuffer> PageBuffer::allocate(size_t bytes) { return map_pages(bytes, 0); }

Result<PageBuffer> PageBuffer::reserve(size_t bytes) { return map_pages(bytes, MAP_NORESERVE); }

Status PageBuffer::resize(size_t bytes) {
  if (bytes == size_) return {};
  if (!data_) {
    auto fresh = allocate(bytes);
    if (!fresh.ok()) return fresh.status();
    *this = std::move(*fresh);
    return {};
  }
  if (bytes == 0) {
    *this = PageBuffer();
    return {};
  }
  void* p = mremap(data_, size_, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED)
    return Status::from_errno("grow table memory to " + std::to_string(bytes) + " bytes");
  if (bytes > size_ && huge_pages_on())
    madvise(static_cast<std::byte*>(p) + size_, bytes - size_, MADV_HUGEPAGE);
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  return {};
}

Status PageBuffer::move_into(PageBuffer& dst, size_t offset) {
  if (size_ == 0) return {};
  if (offset > dst.size_ || size_ > dst.size_ - offset + (kPage - 1) ||
      reinterpret_cast<uintptr_t>(dst.data_ + offset) % kPage || size_ % kPage)
    return Status::error("assemble table memory", "a region does not fit where it belongs");
  void* p = mremap(data_, size_, size_, MREMAP_MAYMOVE | MREMAP_FIXED, dst.data_ + offset);
  if (p == MAP_FAILED) return Status::from_errno("assemble table memory");
  data_ = nullptr;
  size_ = 0;
  return {};
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
