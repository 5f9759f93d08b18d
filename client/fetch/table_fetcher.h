// Reads a remote table through a TableReader and turns it into validated
// records for the loader. open() reads the small parts whole (header, DB
// directory, scripts region); run() then makes three passes over computed
// offsets:
//   1. the slot array, in chunks of whole slots, several reads in flight;
//   2. the heap, front to back, for records too big for a slot;
//   3. records that failed validation, re-read once each.
// open() runs on the caller's thread; run() then owns the reader on the fetch
// thread until it returns. Nothing unvalidated reaches the queue.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "client/fetch/buffer_pool.h"
#include "client/fetch/record_batch.h"
#include "common/transport/transport.h"
#include "proto/table_layout.h"

namespace rrs {

struct TableInfo {
  control::Descriptor descriptor;
  table::Header header;
  std::vector<table::DbEntry> dbs;
  table::Scripts scripts;  // functions and Lua scripts, validated; applied before the keys
};

struct FetchOptions {
  uint32_t chunk_size = 4u << 20;
  uint32_t in_flight = 8;
  std::chrono::milliseconds io_timeout{30000};
  size_t queue_depth = 8;
  // Reconnects allowed after a lost connection (--retries), and how long each may take.
  uint32_t retries = 3;
  std::chrono::milliseconds reconnect_timeout{30000};
};

class TableFetcher {
 public:
  TableFetcher(TableReader& reader, FetchOptions opts, BlockingQueue<RecordBatch>& out)
      : reader_(reader), opts_(opts), out_(out), retries_left_(opts.retries) {}

  // Reads and validates the header, the DB directory and the scripts region
  // (the reader is connected).
  Result<TableInfo> open();
  // Streams every record into the queue and closes it (also on failure).
  Status run();
  // Reads and validates the record in slot `index` on its own, as a batch of
  // one: after open(), never while run() is going. kBadData when it does not
  // validate (or there is no such slot).
  Result<RecordBatch> read_record(uint64_t index);
  void cancel();

  const std::vector<RecordFailure>& failures() const { return failures_; }
  uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }

 private:
  struct Range {
    uint64_t offset;
    uint32_t length;
  };
  struct HeapRef {
    uint64_t index;
    table::SlotView view;
    std::array<std::byte, table::kSlotHeaderSize> slot_header;
  };
  using DoneFn = std::function<Status(size_t i, BufferPool::Lease lease, uint32_t length)>;
  // Slot chunks read but not yet decoded.
  static constexpr size_t kDecodeQueueDepth = 4;

  // Reads `count` ranges with up to in_flight outstanding and hands each
  // completed one to `done`, in order.
  Status stream(size_t count, const std::function<Range(size_t)>& plan, const DoneFn& done);
  // After a lost connection: reconnects if retries are left and the epoch is
  // the same, else returns why not.
  Status reconnect(const Status& cause);
  // Reads [offset, offset+dst.size()) of any length into `dst`.
  Status read_into(uint64_t offset, std::span<std::byte> dst);

  Status fetch_slots();
  Status fetch_heap();
  Status fetch_big_record(HeapRef& ref);
  Status retry_failed();
  // Decodes one slot; heap slots are queued for pass 2, bad ones for pass 3.
  void take_slot(uint64_t index, std::span<const std::byte> bytes, RecordBatch& batch);
  uint32_t db_of(uint64_t index) const;
  // Hands a batch to the loader. From the fetch thread pass keepalive_ as
  // `idle`, so the server keeps hearing from us while the loader is behind.
  bool push(RecordBatch batch, const std::function<void()>& idle = {});

  TableReader& reader_;
  // The fetch thread's idle duty while it waits on the pipeline; a failure
  // shows on the next read, which reconnects.
  const std::function<void()> keepalive_ = [this] { (void)reader_.keepalive(); };
  FetchOptions opts_;
  BlockingQueue<RecordBatch>& out_;
  TableInfo info_;
  std::unique_ptr<BufferPool> pool_;
  std::vector<HeapRef> heap_refs_;
  std::vector<uint64_t> retry_;
  std::vector<RecordFailure> failures_;
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<bool> cancelled_{false};
  uint32_t retries_left_ = 0;
};

}  // namespace rrs
