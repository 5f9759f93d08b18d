#include "client/fetch/table_fetcher.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <thread>

#include "client/client_metrics.h"
#include "client/fetch/header_watch.h"
#include "client/fetch/table_fetcher_internal.h"
#include "common/base/log.h"
#include "proto/control.h"

namespace rrs {
namespace {

// While caught up with a table being written: how soon its header is read
// again, doubling while nothing new is complete. The server rewrites it
// every few hundred records.
constexpr std::chrono::milliseconds kHeaderPollFirst{1};
constexpr std::chrono::milliseconds kHeaderPollMax{16};
// How often a wait for the server to write more is logged.
constexpr std::chrono::seconds kWaitLogEvery{30};

// The server's "epoch gone" refusal: the epoch read was replaced. The
// session reports a server's refusal as "<code name>: <text>".
bool epoch_gone(const Status& s) {
  return s.reason().rfind(control::error_code_name(control::ErrorCode::kEpochGone), 0) == 0;
}

}  // namespace

uint64_t read_size(const table::Header& h) {
  return table::kHeaderSize + h.scripts_size + h.dbdir_size + h.slots_size + h.heap_size;
}

void TableInfo::catch_up(const table::Header& later, const std::vector<table::DbEntry>& later_dbs) {
  const uint32_t rdb_version = header.rdb_version;
  header = later;
  header.rdb_version = rdb_version;
  dbs = later_dbs;
}

Result<TableInfo> TableFetcher::open() {
  info_.descriptor = reader_.descriptor();
  if (info_.descriptor.layout_version != table::kLayoutVersion)
    return Status::error("read table descriptor",
                         "server publishes layout version " +
                             std::to_string(info_.descriptor.layout_version) +
                             ", this client reads " + std::to_string(table::kLayoutVersion) +
                             " (upgrade the older side)")
        .as(ErrorKind::kBadData);

  uint32_t read_len = std::min(opts_.chunk_size, reader_.max_read_length());
  uint32_t depth = std::min(opts_.in_flight, reader_.max_in_flight());
  opts_.chunk_size = read_len;
  opts_.in_flight = depth;
  // Enough buffers that the reads in flight, the decode queue, the batch being
  // decoded, the loader's queue and the batch being loaded never wait on
  // each other.
  auto pool = BufferPool::create(reader_, depth + opts_.queue_depth + kDecodeQueueDepth + 3,
                                 read_len);
  if (!pool.ok()) return pool.status();
  pool_ = std::move(*pool);

  auto h = read_header();
  if (!h.ok()) return h.status();
  if (h->state == table::State::kBroken) return broken_off(*h);
  info_.header = *h;

  // A table still being written has no DB directory yet: run() reads it
  // once the table is complete.
  if (info_.complete()) {
    std::vector<std::byte> dir(info_.header.dbdir_size);
    RRS_RETURN_IF_ERROR(read_into(info_.header.dbdir_offset, dir));
    auto dbs = table::decode_db_directory(info_.header, dir);
    if (!dbs.ok()) return dbs.status().as(ErrorKind::kBadData);
    info_.dbs = std::move(*dbs);
  }

  // Functions and scripts: small, and needed before the first key is loaded.
  std::vector<std::byte> scripts(info_.header.scripts_size);
  RRS_RETURN_IF_ERROR(read_into(info_.header.scripts_offset, scripts));
  auto decoded = table::decode_scripts(info_.header, scripts);
  if (!decoded.ok()) return decoded.status().as(ErrorKind::kBadData);
  info_.scripts = std::move(*decoded);
  publish_known();
  return info_;
}

Result<TableInfo> TableFetcher::wait_until_complete() {
  while (!info_.complete()) RRS_RETURN_IF_ERROR(await_records(info_.header.record_count));
  return info_;
}

TableFetcher::Watermark TableFetcher::watermark() const {
  std::lock_guard lock(watermark_mu_);
  return watermark_;
}

void TableFetcher::publish_known() {
  known_ = std::make_shared<const Known>(Known{info_.header, info_.dbs});
  Watermark w{info_.header.record_count, info_.header.total_size, read_size(info_.header),
              info_.complete()};
  {
    std::lock_guard lock(watermark_mu_);
    watermark_ = w;
  }
  client_metrics().table_records.set(static_cast<double>(w.records));
  if (w.complete) client_metrics().table_bytes.set(static_cast<double>(w.bytes));
}

Result<table::Header> TableFetcher::read_header() {
  std::vector<std::byte> head(table::kHeaderSize);
  for (uint32_t torn = 0;; ++torn) {
    RRS_RETURN_IF_ERROR(read_into(0, head));
    // The table's bytes (progress, the summary's MBps) hold one copy of the
    // header: copies read again, polls for more records or torn ones, are
    // traffic (the fetched bytes metric), not table read.
    if (header_counted_) bytes_read_.fetch_sub(head.size(), std::memory_order_relaxed);
    header_counted_ = true;
    if (header_intact(head)) break;
    // Being rewritten while it was copied: the next copy is whole.
    if (torn + 1 == kMaxTornHeaderReads)
      return Status::error("validate table header", "header checksum mismatch in " +
                                                        std::to_string(kMaxTornHeaderReads) +
                                                        " reads in a row")
          .as(ErrorKind::kBadData);
    if (cancelled_) return cancelled();
  }
  // Checked against the region as the server describes it now (after a
  // reconnect, a complete table's own length rather than its room).
  auto h = table::decode_header(head, reader_.descriptor().table_length);
  if (!h.ok()) return h.status().as(ErrorKind::kBadData);
  if (h->epoch != reader_.descriptor().epoch)
    return Status::error("validate table header", "epoch differs from the descriptor's")
        .as(ErrorKind::kBadData);
  return h;
}

Status TableFetcher::advance(const table::Header& next) {
  RRS_RETURN_IF_ERROR(check_continues(info_.header, next));
  if (next.state == table::State::kBroken) return broken_off(next);
  if (next.state == table::State::kReady && !info_.complete()) {
    std::vector<std::byte> dir(next.dbdir_size);
    RRS_RETURN_IF_ERROR(read_into(next.dbdir_offset, dir));
    auto dbs = table::decode_db_directory(next, dir);
    if (!dbs.ok()) return dbs.status().as(ErrorKind::kBadData);
    info_.dbs = std::move(*dbs);
  }
  info_.header = next;
  publish_known();
  return {};
}

Status TableFetcher::await_records(uint64_t have) {
  auto delay = kHeaderPollFirst;
  auto logged = Clock::now();
  for (;;) {
    RRS_ASSIGN_OR_RETURN(const table::Header next, read_header());
    RRS_RETURN_IF_ERROR(advance(next));
    if (info_.header.record_count > have || info_.complete()) return {};
    if (Clock::now() - logged >= kWaitLogEvery) {
      logged = Clock::now();
      log::info("waiting for the sidecar to write more of epoch " +
                std::to_string(info_.header.epoch) + " (" + std::to_string(have) +
                " records so far)");
    }
    // The server hears from us while we wait (verbs: a KEEPALIVE when
    // due); a failure shows on the next read, which reconnects.
    (void)reader_.keepalive();
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, kHeaderPollMax);
    if (cancelled_) return cancelled();
  }
}

void TableFetcher::cancel() {
  cancelled_ = true;
  if (pool_) pool_->cancel();
  out_.cancel();
}

bool TableFetcher::push(RecordBatch batch, const std::function<void()>& idle) {
  if (batch.records.empty()) return true;
  return out_.push(std::move(batch), idle);
}

Status TableFetcher::run() {
  Status s = fetch_slots();
  // Records decoded before the directory existed went by their own DB.
  if (s.ok()) s = db_runs_.check(info_.dbs);
  if (s.ok()) s = fetch_heap();
  if (s.ok()) s = retry_failed();
  out_.close();
  return s;
}

Status TableFetcher::stream(size_t count, const std::function<Range(size_t)>& plan,
                            const DoneFn& done) {
  struct InFlight {
    size_t i;
    uint32_t length;
    BufferPool::Lease lease;
    bool complete = false;
  };
  std::deque<InFlight> window;
  std::vector<uint64_t> completed;
  size_t next = 0;
  std::vector<TableRead> batch;
  while (next < count || !window.empty()) {
    // Refill the window in one batch (one doorbell, selective signaling on verbs).
    batch.clear();
    while (next < count && window.size() < opts_.in_flight) {
      BufferPool::Lease lease = pool_->take(keepalive_);
      if (!lease) return cancelled();
      Range r = plan(next);
      batch.push_back({next, r.offset, lease.bytes.first(r.length)});
      window.push_back({next, r.length, std::move(lease)});
      ++next;
    }
    completed.clear();
    Status io = batch.empty() ? Status() : reader_.post_reads(batch);
    if (io.ok()) io = reader_.poll(completed, opts_.io_timeout);
    if (!io.ok()) {
      // Reads in flight are lost with the connection; what was delivered is
      // validated and stays. Reconnect and go on from the first read not
      // delivered, if the server still serves the same epoch.
      if (io.kind() != ErrorKind::kUnavailable) return io;
      RRS_RETURN_IF_ERROR(reconnect(io));
      next = window.empty() ? next : window.front().i;
      window.clear();
      continue;
    }
    for (uint64_t id : completed) {
      if (id < window.front().i || id - window.front().i >= window.size())
        return Status::error("fetch table", "completion for a read that is not in flight");
      window[id - window.front().i].complete = true;
    }
    while (!window.empty() && window.front().complete) {
      InFlight f = std::move(window.front());
      window.pop_front();
      bytes_read_.fetch_add(f.length, std::memory_order_relaxed);
      client_metrics().fetched_bytes.add(f.length);
      RRS_RETURN_IF_ERROR(done(f.i, std::move(f.lease), f.length));
      if (cancelled_) return cancelled();
    }
  }
  return {};
}

Status TableFetcher::reconnect(const Status& cause) {
  // A table still being written that the server stopped serving never comes
  // back: its snapshot broke off (the server then withdraws it) or a newer
  // one replaced it. Reconnecting would only wait for the next snapshot.
  if (known_ && !info_.complete() && epoch_gone(cause))
    return Status::error("fetch table",
                         "the sidecar stopped serving epoch " + std::to_string(info_.header.epoch) +
                             " while it was being written, after " +
                             std::to_string(info_.header.record_count) + " records (" +
                             cause.reason() +
                             "): its snapshot broke off or a newer one replaced it; run "
                             "rdma-client again for the next snapshot")
        .as(ErrorKind::kUnavailable);
  if (retries_left_ == 0) return cause.wrap("fetch table (no --retries left)");
  --retries_left_;
  log::warn(cause.message() + "; reconnecting (" + std::to_string(retries_left_) +
            " retries left after this one)");
  // The epoch of the lost connection (the header may not be read yet).
  const uint64_t was = reader_.descriptor().epoch;
  RRS_RETURN_IF_ERROR(
      reader_.connect(Clock::now() + opts_.reconnect_timeout).wrap("reconnect to rdma-server"));
  const uint64_t epoch = reader_.descriptor().epoch;
  if (epoch != was) {
    replaced_by_ = epoch;
    return Status::error("resume the sync", "the server now serves epoch " + std::to_string(epoch) +
                                                ", not " + std::to_string(was) +
                                                " (the sidecar restarted or "
                                                "took a newer snapshot)")
        .as(ErrorKind::kUnavailable);
  }
  log::info("reconnected; resuming epoch " + std::to_string(epoch));
  return {};
}

Status TableFetcher::read_into(uint64_t offset, std::span<std::byte> dst) {
  if (dst.empty()) return {};
  const uint32_t piece = opts_.chunk_size;
  size_t count = (dst.size() + piece - 1) / piece;
  return stream(
      count,
      [&](size_t i) {
        return Range{offset + i * piece,
                     static_cast<uint32_t>(std::min<uint64_t>(piece, dst.size() - i * piece))};
      },
      [&](size_t i, const BufferPool::Lease& lease, uint32_t length) {
        std::memcpy(dst.data() + i * piece, lease.bytes.data(), length);
        return Status();
      });
}

}  // namespace rrs
