// Reads a remote table through a TableReader and turns it into validated
// records for the loader. open() reads the small parts whole (header, DB
// directory, scripts region); run() then makes three passes over computed
// offsets:
//   1. the slot array, in chunks of whole slots, several reads in flight;
//   2. the heap, front to back, for records too big for a slot;
//   3. records that failed validation, re-read once each.
// A table still being written (state building, proto/table_layout.h) has no
// DB directory yet: pass 1 reads the slots its header counts as complete,
// then reads the header again (polling, with keepalives) until more are, and
// reads the directory once the table is ready; passes 2 and 3 follow then.
// open() runs on the caller's thread; run() then owns the reader on the fetch
// thread until it returns. Nothing unvalidated reaches the queue.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "client/fetch/buffer_pool.h"
#include "client/fetch/db_runs.h"
#include "client/fetch/record_batch.h"
#include "common/transport/transport.h"
#include "proto/table_layout.h"

namespace rrs {

struct TableInfo {
  control::Descriptor descriptor;
  table::Header header;
  std::vector<table::DbEntry> dbs;  // empty until the table is complete
  table::Scripts scripts;           // functions and Lua scripts, validated; applied before the keys

  // Every record written and the DB directory read (state ready).
  bool complete() const { return header.state == table::State::kReady; }
  // Takes what a later header of the same table says (more records complete;
  // once ready, the final counts and `later_dbs`), keeping this copy's RDB
  // version (a conversion restamps it).
  void catch_up(const table::Header& later, const std::vector<table::DbEntry>& later_dbs);
};

// What reading a table whole takes: its header, scripts region, DB
// directory, and the slots and heap in use; not the room a table built as
// it streams leaves unused (which its total_size counts).
uint64_t read_size(const table::Header& h);

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

  // Reads and validates the header, the DB directory (none while the table
  // is being written) and the scripts region (the reader is connected).
  Result<TableInfo> open();
  // After open(), before run(), on the caller's thread: waits until the
  // table is complete (for a load path that needs its DB list up front).
  // kUnavailable when its snapshot broke off.
  Result<TableInfo> wait_until_complete();
  // Streams every record into the queue and closes it (also on failure).
  // kUnavailable when the table's snapshot broke off.
  Status run();
  // The table as run() left it, complete after a run() that returned OK.
  // Only once run() has returned: the sync driver joins the fetch thread
  // first and hands it to the copies the load path holds.
  const TableInfo& table() const { return info_; }
  // What any thread may ask while run() goes: records known complete, and
  // whether that is all of them (then `bytes` is the table's size and
  // `read_bytes` its read_size()).
  struct Watermark {
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t read_bytes = 0;
    bool complete = false;
  };
  Watermark watermark() const;
  // Reads and validates the record in slot `index` on its own, as a batch of
  // one: after open(), never while run() is going. kBadData when it does not
  // validate (or there is no such slot).
  Result<RecordBatch> read_record(uint64_t index);
  void cancel();

  const std::vector<RecordFailure>& failures() const { return failures_; }
  // Records that failed validation when first read and were read again
  // (pass 3), whether or not they validated then. After run().
  uint64_t rereads() const { return rereads_; }
  // The table's bytes read: one copy of the header, then its regions.
  uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  // After open() or run() failed: the epoch the server serves instead of
  // the one being read, when that is why (a reconnect found the sidecar
  // restarted, or a newer snapshot in its place). Nothing of the old epoch
  // can be resumed, but a sync can start over on the new one.
  std::optional<uint64_t> replaced_by() const { return replaced_by_; }

 private:
  struct Range {
    uint64_t offset;
    uint32_t length;
  };
  // The header and DB directory as the fetch thread last read them, shared
  // with the decoder thread (which may not touch info_).
  struct Known {
    table::Header header;
    std::vector<table::DbEntry> dbs;  // empty until ready
  };
  using KnownPtr = std::shared_ptr<const Known>;
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
  // Reads the header until a copy's CRC verifies (a copy taken while the
  // server rewrote it does not), and decodes it.
  Result<table::Header> read_header();
  // Takes a header read later: checks it continues the one known, fails on
  // a broken table, reads the DB directory of a ready one.
  Status advance(const table::Header& next);
  // Polls the header until more than `have` records are complete, or the
  // table is.
  Status await_records(uint64_t have);
  void publish_known();

  Status fetch_slots();
  Status fetch_heap();
  Status fetch_big_record(HeapRef& ref);
  Status retry_failed();
  // Decodes one slot; heap slots are queued for pass 2, bad ones for pass 3.
  void take_slot(const Known& known, uint64_t index, std::span<const std::byte> bytes,
                 RecordBatch& batch);
  // The DB slot `index` belongs in: the directory's once there is one, else
  // what the slot says.
  static uint32_t expected_db(const table::Header& h, const std::vector<table::DbEntry>& dbs,
                              uint64_t index, std::span<const std::byte> slot);
  // Hands a batch to the loader. From the fetch thread pass keepalive_ as
  // `idle`, so the server keeps hearing from us while the loader is behind.
  bool push(RecordBatch batch, const std::function<void()>& idle = {});

  TableReader& reader_;
  // The fetch thread's idle duty while it waits on the pipeline; a failure
  // shows on the next read, which reconnects.
  const std::function<void()> keepalive_ = [this] { (void)reader_.keepalive(); };
  FetchOptions opts_;
  BlockingQueue<RecordBatch>& out_;
  TableInfo info_;  // the caller's before run(), the fetch thread's during it
  KnownPtr known_;  // set by the fetch thread only
  mutable std::mutex watermark_mu_;
  Watermark watermark_;
  DbRuns db_runs_;  // the decoder thread's until it is joined
  std::unique_ptr<BufferPool> pool_;
  std::vector<HeapRef> heap_refs_;
  std::vector<uint64_t> retry_;
  std::vector<RecordFailure> failures_;
  uint64_t rereads_ = 0;
  std::atomic<uint64_t> bytes_read_{0};
  bool header_counted_ = false;  // bytes_read_ holds one copy of the header
  std::atomic<bool> cancelled_{false};
  uint32_t retries_left_ = 0;
  std::optional<uint64_t> replaced_by_;
};

}  // namespace rrs
