// One page-aligned anonymous mapping: the memory a table epoch lives in, so
// the verbs transport can register it as is (one registration per epoch, never
// a copy per client). Move-only owner; unmaps on destruction. The pages may
// come from several mappings moved into place (move_into); munmap covers all.
#pragma once

#include <cstddef>
#include <span>

#include "common/base/status.h"

namespace rrs {

class PageBuffer {
 public:
  PageBuffer() = default;
  static Result<PageBuffer> allocate(size_t bytes);
  // Room for a table still to be written: address space only, its pages
  // taken as they are first written (MAP_NORESERVE), so room never used
  // costs no memory. Fails where the kernel refuses to overcommit
  // (vm.overcommit_memory=2).
  static Result<PageBuffer> reserve(size_t bytes);
  ~PageBuffer();
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<std::byte> span() { return {data_, size_}; }
  std::span<const std::byte> span() const { return {data_, size_}; }

  // Grows or shrinks the mapping to `bytes` (page multiple). The kernel moves
  // page tables, never the bytes: cheap at any size, but data() may change.
  Status resize(size_t bytes);
  // Moves all of this buffer's pages (size() a page multiple) to
  // dst.data() + offset (page aligned, inside dst), replacing what was there,
  // without copying; this buffer is left empty. How a table is assembled from
  // regions written while the snapshot streamed in.
  Status move_into(PageBuffer& dst, size_t offset);

 private:
  static Result<PageBuffer> map_pages(size_t bytes, int extra_flags);

  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rrs
