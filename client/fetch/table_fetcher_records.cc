// TableFetcher, the records: slots read in chunks and decoded on a thread
// of their own, heap payloads after them, big records one by one, and the
// records that failed validation read again. Opening the table, following
// its header while it is written, and reconnecting: table_fetcher.cc.
#include <algorithm>
#include <cstring>
#include <thread>

#include "client/fetch/table_fetcher.h"
#include "client/fetch/table_fetcher_internal.h"
#include "proto/byte_order.h"

namespace rrs {
namespace {

uint32_t db_of(const std::vector<table::DbEntry>& dbs, uint64_t index) {
  auto it = std::upper_bound(dbs.begin(), dbs.end(), index,
                             [](uint64_t i, const table::DbEntry& e) { return i < e.first_slot; });
  return it == dbs.begin() ? 0 : std::prev(it)->db;
}

}  // namespace

uint32_t TableFetcher::expected_db(const table::Header& h, const std::vector<table::DbEntry>& dbs,
                                   uint64_t index, std::span<const std::byte> slot) {
  if (h.state == table::State::kReady) return db_of(dbs, index);
  return wire::load_u32(slot.data() + table::slot::kDb);  // slot is slot_size >= 64 bytes
}

void TableFetcher::take_slot(const Known& known, uint64_t index, std::span<const std::byte> bytes,
                             RecordBatch& batch) {
  auto v = table::decode_slot(known.header, index,
                              expected_db(known.header, known.dbs, index, bytes), bytes);
  // Without a directory the record's own DB is taken if it does not go back
  // (records are sorted by DB); run() checks the runs against the directory.
  if (!v.ok() || (known.header.state != table::State::kReady && !db_runs_.note(index, v->db))) {
    retry_.push_back(index);
    return;
  }
  if (v->kind == table::SlotKind::kHeap) {
    HeapRef ref{index, *v, {}};
    std::memcpy(ref.slot_header.data(), bytes.data(), table::kSlotHeaderSize);
    heap_refs_.push_back(ref);
    return;
  }
  batch.records.push_back({index, v->db, v->expire_at_ms, v->key, v->payload});
}

Status TableFetcher::fetch_slots() {
  // Checksumming and decoding run on a thread of their own, so this one only
  // posts and polls and the reads never wait for the CPU work (measured on
  // rxe: decoding inline cost about a quarter of the READ rate). Until it is
  // joined, that thread alone touches heap_refs_, retry_ and db_runs_; each
  // chunk carries what was known of the table when it was read.
  struct RawChunk {
    uint64_t first;
    BufferPool::Lease lease;
    uint32_t length;
    KnownPtr known;
  };
  BlockingQueue<RawChunk> raw(kDecodeQueueDepth);
  std::thread decoder([&] {
    while (auto chunk = raw.pop()) {
      const Known& known = *chunk->known;
      const uint32_t slot_size = known.header.slot_size;
      RecordBatch batch;
      uint64_t n = chunk->length / slot_size;
      batch.records.reserve(n);
      for (uint64_t k = 0; k < n; ++k)
        take_slot(known, chunk->first + k, chunk->lease.bytes.subspan(k * slot_size, slot_size),
                  batch);
      batch.keepalive = std::move(chunk->lease.hold);
      if (!push(std::move(batch))) {
        raw.cancel();  // the loader gave up: stop the reads too
        return;
      }
    }
  });

  // Rounds: every slot the header counts as complete, then (while the table
  // is being written) the header again until it counts more. No slot at or
  // past the known count is ever read.
  Status s;
  uint64_t next = 0;  // the first slot not read yet
  while (s.ok()) {
    const KnownPtr known = known_;
    const table::Header& h = known->header;
    const uint64_t upto = h.record_count;
    if (next == upto) {
      if (info_.complete()) break;
      s = await_records(next);
      continue;
    }
    const uint64_t per_read = std::max<uint64_t>(1, opts_.chunk_size / h.slot_size);
    const uint64_t from = next;
    s = stream((upto - from + per_read - 1) / per_read,
               [&](size_t i) {
                 uint64_t first = from + i * per_read;
                 uint64_t n = std::min(per_read, upto - first);
                 return Range{h.slot_offset(first), static_cast<uint32_t>(n * h.slot_size)};
               },
               [&](size_t i, BufferPool::Lease lease, uint32_t length) {
                 return raw.push({from + i * per_read, std::move(lease), length, known}, keepalive_)
                            ? Status()
                            : cancelled();
               });
    next = upto;
  }
  if (s.ok())
    raw.close();
  else
    raw.cancel();
  decoder.join();
  return s;
}

Status TableFetcher::fetch_heap() {
  const table::Header& h = info_.header;
  // Group neighbouring heap records into reads of at most one chunk; records
  // bigger than a chunk are read on their own afterwards.
  struct Group {
    size_t first, last;   // heap_refs_ [first, last)
    uint64_t begin, end;  // heap-relative byte range
  };
  std::vector<Group> groups;
  std::vector<size_t> big;
  for (size_t i = 0; i < heap_refs_.size(); ++i) {
    const table::SlotView& v = heap_refs_[i].view;
    if (v.data_len() > opts_.chunk_size) {
      big.push_back(i);
      continue;
    }
    uint64_t end = v.heap_ref + v.data_len();
    if (!groups.empty() && groups.back().last == i && v.heap_ref >= groups.back().end &&
        end - groups.back().begin <= opts_.chunk_size) {
      groups.back().last = i + 1;
      groups.back().end = end;
    } else {
      groups.push_back({i, i + 1, v.heap_ref, end});
    }
  }
  Status s = stream(
      groups.size(),
      [&](size_t g) {
        return Range{h.heap_offset + groups[g].begin,
                     static_cast<uint32_t>(groups[g].end - groups[g].begin)};
      },
      [&](size_t g, BufferPool::Lease lease, uint32_t) {
        RecordBatch batch;
        for (size_t i = groups[g].first; i < groups[g].last; ++i) {
          HeapRef& ref = heap_refs_[i];
          auto bytes = lease.bytes.subspan(ref.view.heap_ref - groups[g].begin,
                                           ref.view.data_len());
          if (!table::verify_heap_record(ref.index, ref.slot_header, ref.view, bytes).ok()) {
            retry_.push_back(ref.index);
            continue;
          }
          batch.records.push_back(
              {ref.index, ref.view.db, ref.view.expire_at_ms, ref.view.key, ref.view.payload});
        }
        batch.keepalive = std::move(lease.hold);
        return push(std::move(batch), keepalive_) ? Status() : cancelled();
      });
  RRS_RETURN_IF_ERROR(s);
  for (size_t i : big) RRS_RETURN_IF_ERROR(fetch_big_record(heap_refs_[i]));
  return {};
}

Status TableFetcher::fetch_big_record(HeapRef& ref) {
  auto mem = PageBuffer::allocate(ref.view.data_len());
  if (!mem.ok()) return mem.status().wrap("record " + std::to_string(ref.index));
  auto buf = std::make_shared<PageBuffer>(std::move(*mem));
  RRS_RETURN_IF_ERROR(read_into(info_.header.heap_offset + ref.view.heap_ref, buf->span()));
  if (!table::verify_heap_record(ref.index, ref.slot_header, ref.view, buf->span()).ok()) {
    retry_.push_back(ref.index);
    return {};
  }
  RecordBatch batch;
  batch.records.push_back(
      {ref.index, ref.view.db, ref.view.expire_at_ms, ref.view.key, ref.view.payload});
  batch.keepalive = buf;
  return push(std::move(batch), keepalive_) ? Status() : cancelled();
}

Result<RecordBatch> TableFetcher::read_record(uint64_t index) {
  const table::Header& h = info_.header;
  if (index >= h.record_count)
    return Status::error("read record " + std::to_string(index),
                         "the table has " + std::to_string(h.record_count) + " records")
        .as(ErrorKind::kBadData);
  auto slot = std::make_shared<std::vector<std::byte>>(h.slot_size);
  RRS_RETURN_IF_ERROR(read_into(h.slot_offset(index), *slot));
  auto v = table::decode_slot(h, index, expected_db(h, info_.dbs, index, *slot), *slot);
  if (!v.ok()) return v.status().as(ErrorKind::kBadData);
  RecordBatch batch;
  if (v->kind == table::SlotKind::kHeap) {
    auto heap = std::make_shared<std::vector<std::byte>>(v->data_len());
    RRS_RETURN_IF_ERROR(read_into(h.heap_offset + v->heap_ref, *heap));
    RRS_RETURN_IF_ERROR(table::verify_heap_record(index, *slot, *v, *heap).as(ErrorKind::kBadData));
    batch.keepalive = heap;
  } else {
    batch.keepalive = slot;
  }
  batch.records.push_back({index, v->db, v->expire_at_ms, v->key, v->payload});
  return batch;
}

Status TableFetcher::retry_failed() {
  // Corruption in flight is re-read once; what still fails is reported, never loaded.
  std::vector<uint64_t> indexes;
  indexes.swap(retry_);
  std::sort(indexes.begin(), indexes.end());
  rereads_ += indexes.size();
  for (uint64_t index : indexes) {
    auto batch = read_record(index);
    if (!batch.ok() && batch.status().kind() == ErrorKind::kBadData) {
      failures_.push_back({index, batch.status().message()});
      continue;
    }
    if (!batch.ok()) return batch.status();
    if (!push(std::move(*batch), keepalive_)) return cancelled();
  }
  return {};
}

}  // namespace rrs
