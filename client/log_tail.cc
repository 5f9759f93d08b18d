#include "client/log_tail.h"

#include <algorithm>

namespace rrs {

using control::Region;

LogTail::LogTail(TableReader& reader, std::chrono::milliseconds io_timeout, uint32_t max_chunk)
    : reader_(reader), io_timeout_(io_timeout), max_chunk_(max_chunk) {}

LogTail::~LogTail() {
  if (header_buf_.empty()) return;
  reader_.unregister_buffer(header_buf_);
  reader_.unregister_buffer(data_buf_);
}

Status LogTail::attach() {
  const control::Descriptor& d = reader_.descriptor();
  if (d.log_id == 0)
    return Status::error("follow the change log",
                         "rdma-server keeps no change log: it runs --source scan or --log-size 0; "
                         "run it with --source psync to follow")
        .as(ErrorKind::kUnavailable);
  if (d.log_length <= change_log::kHeaderSize)
    return Status::error("follow the change log", "the descriptor's log length is too small")
        .as(ErrorKind::kBadData);
  max_chunk_ = static_cast<uint32_t>(std::min<uint64_t>(
      {max_chunk_, reader_.max_read_length(), d.log_length - change_log::kHeaderSize}));
  if (!header_buf_.empty()) return {};  // registered before; the reader re-registers
  header_buf_.resize(change_log::kHeaderSize);
  data_buf_.resize(max_chunk_);
  RRS_RETURN_IF_ERROR(reader_.register_buffer(header_buf_));
  return reader_.register_buffer(data_buf_);
}

Status LogTail::read_ranges(std::span<const TableRead> reads) {
  RRS_RETURN_IF_ERROR(reader_.post_reads(reads));
  std::vector<uint64_t> done;
  auto deadline = Clock::now() + io_timeout_;
  while (done.size() < reads.size()) {
    if (Clock::now() >= deadline)
      return Status::error("read the change log", "no answer within the I/O timeout")
          .as(ErrorKind::kUnavailable);
    RRS_RETURN_IF_ERROR(reader_.poll(done, io_timeout_));
  }
  for (const TableRead& r : reads) bytes_read_ += r.dst.size();
  return {};
}

Result<change_log::Header> LogTail::read_header() {
  TableRead r{0, 0, header_buf_, Region::kChangeLog};
  RRS_RETURN_IF_ERROR(read_ranges({&r, 1}).wrap("read the change log header"));
  return decode_checked(header_buf_);
}

Result<change_log::Header> LogTail::decode_checked(std::span<const std::byte> bytes) const {
  auto h = change_log::decode_header(bytes);
  if (!h.ok()) return h.status();
  const control::Descriptor& d = reader_.descriptor();
  if (h->log_id != d.log_id || change_log::memory_size(h->capacity) != d.log_length)
    return Status::error("change log header", "does not match the descriptor (log id " +
                                                  std::to_string(h->log_id) + ", capacity " +
                                                  std::to_string(h->capacity) + ")")
        .as(ErrorKind::kBadData);
  return h;
}

Result<LogTail::Copy> LogTail::read(const change_log::Header& before, uint64_t from, uint64_t to) {
  if (to < from || to > before.end || to - from > max_chunk_)
    return Status::error("read the change log", "bad range " + std::to_string(from) + ".." +
                                                    std::to_string(to));
  // The bytes (one READ, two when they wrap), then the header, fenced so it
  // is read only once the bytes are: the seqlock check, in one round trip.
  auto parts = change_log::segments(before.capacity, from, to);
  TableRead reads[3];
  size_t filled = 0;
  for (size_t i = 0; i < parts.count; ++i) {
    reads[i] = {i + 1, parts.parts[i].offset,
                std::span(data_buf_).subspan(filled, parts.parts[i].length), Region::kChangeLog};
    filled += parts.parts[i].length;
  }
  reads[parts.count] = {3, 0, header_buf_, Region::kChangeLog, true};
  RRS_RETURN_IF_ERROR(read_ranges({reads, parts.count + 1}));
  auto after = decode_checked(header_buf_);
  if (!after.ok()) return after.status();
  Copy c;
  c.bytes = std::span(data_buf_).first(filled);
  c.after = *after;
  c.intact = change_log::copy_intact(before, c.after, from);
  return c;
}

}  // namespace rrs
