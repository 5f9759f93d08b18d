#include "common/table/change_log.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/base/clock.h"
#include "proto/crc32c.h"

namespace rrs {

static_assert(std::endian::native == std::endian::little,
              "the change log's header words are written natively and read as little-endian");
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

Result<std::shared_ptr<ChangeLog>> ChangeLog::create(uint64_t capacity, uint64_t log_id,
                                                     std::string_view replid, uint64_t start) {
  const uint64_t block = change_log::kBlockSize;
  capacity = (capacity + block - 1) / block * block;
  if (capacity == 0 || capacity > change_log::kMaxCapacity)
    return Status::error("create the change log", "capacity " + std::to_string(capacity) +
                                                      " outside 1.." +
                                                      std::to_string(change_log::kMaxCapacity));
  auto memory = PageBuffer::allocate(change_log::memory_size(capacity));
  if (!memory.ok()) return memory.status().wrap("create the change log");
  // Fault every page in for writing now. Registering untouched anonymous
  // memory for remote read only pins the shared zero page; the writer's
  // first store would then move to a fresh copy the NIC never sees (the
  // table has no such problem: it is written before it is registered).
  std::memset(memory->data(), 0, memory->size());
  change_log::Header h;
  h.capacity = capacity;
  h.log_id = log_id;
  h.start = h.end = start;
  h.end_unix_us = static_cast<uint64_t>(unix_us());
  h.replid = std::string(replid);
  h.first = start;
  auto header = change_log::encode_header(h);
  std::memcpy(memory->data(), header.data(), header.size());
  return std::shared_ptr<ChangeLog>(
      new ChangeLog(std::move(*memory), capacity, log_id, std::string(replid), start));
}

void ChangeLog::append(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  const uint64_t old_end = word(change_log::kEndAt).load(std::memory_order_relaxed);
  const uint64_t new_end = old_end + bytes.size();
  // Only the last `capacity` bytes can be held. (The block they start in then
  // has a seal no reader checks: start is past its beginning.)
  if (bytes.size() > capacity_) bytes = bytes.subspan(bytes.size() - capacity_);
  // Seqlock: raise start past what is about to be overwritten before
  // touching it, so a reader that re-reads start after its copy sees it.
  if (new_end - first_ > capacity_) {
    const uint64_t lowest_kept = new_end - capacity_;
    auto start = word(change_log::kStartAt);
    if (start.load(std::memory_order_relaxed) < lowest_kept)
      start.store(lowest_kept, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  // Blocks never straddle the ring's end (capacity is whole blocks).
  for (uint64_t at = new_end - bytes.size(); at < new_end;) {
    const uint64_t in_block = (at - first_) % change_log::kBlockSize;
    const uint64_t n = std::min(new_end - at, change_log::kBlockSize - in_block);
    write_in_block(at, bytes.data() + (at - (new_end - bytes.size())), n);
    at += n;
  }
  word(change_log::kEndTimeAt).store(static_cast<uint64_t>(unix_us()), std::memory_order_relaxed);
  word(change_log::kEndAt).store(new_end, std::memory_order_release);
}

void ChangeLog::write_in_block(uint64_t at, const std::byte* bytes, uint64_t n) {
  const uint64_t relative = at - first_;
  const uint64_t in_block = relative % change_log::kBlockSize;
  std::byte* dst = memory_.data() + change_log::kHeaderSize + relative % capacity_;
  std::memcpy(dst, bytes, n);
  open_block_crc_ = crc32c(in_block == 0 ? 0 : open_block_crc_, bytes, n);
  const uint64_t slot = relative / change_log::kBlockSize % change_log::block_count(capacity_);
  word(change_log::seals_offset(capacity_) + slot * change_log::kSealSize)
      .store(change_log::seal_word(static_cast<uint32_t>(in_block + n), open_block_crc_),
             std::memory_order_release);  // a reader that sees the seal sees the bytes
  if (corrupt_at_ && *corrupt_at_ >= at && *corrupt_at_ < at + n) {
    dst[*corrupt_at_ - at] ^= std::byte{0x20};
    corrupt_at_.reset();
  }
}

void ChangeLog::mark_superseded() {
  word(change_log::kFlagsAt).fetch_or(change_log::kFlagSuperseded, std::memory_order_release);
}

}  // namespace rrs
