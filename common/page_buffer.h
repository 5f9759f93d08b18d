// One page-aligned anonymous mapping: the memory a table epoch lives in, so
// the verbs transport can register it as is (one registration per epoch, never
// a copy per client). Move-only owner; unmaps on destruction.
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"

namespace rrs {

class PageBuffer {
 public:
  PageBuffer() = default;
  static Result<PageBuffer> allocate(size_t bytes);
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

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rrs
