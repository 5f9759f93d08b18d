#include "client/follow/log_tail.h"

#include <algorithm>

namespace rrs {

using control::Region;

LogTail::LogTail(TableReader& reader, std::chrono::milliseconds io_timeout, uint32_t max_chunk)
    : reader_(reader), io_timeout_(io_timeout), max_chunk_(max_chunk) {}

LogTail::~LogTail() {
  if (header_buf_.empty()) return;
  reader_.unregister_buffer(header_buf_);
  reader_.unregister_buffer(data_buf_);
  reader_.unregister_buffer(seal_buf_);
}

Status LogTail::attach() {
  const control::Descriptor& d = reader_.descriptor();
  if (d.log_id == 0)
    return Status::error("follow the change log",
                         "rdma-server keeps no change log: it runs --source scan, --source rdb "
                         "or --log-size 0; run it with --source psync to follow")
        .as(ErrorKind::kUnavailable);
  if (d.log_length <= change_log::kHeaderSize)
    return Status::error("follow the change log", "the descriptor's log length is too small")
        .as(ErrorKind::kBadData);
  // A copy is whole blocks: up to a block more at either end of a chunk.
  constexpr uint64_t kSlack = 2 * change_log::kBlockSize;
  if (reader_.max_read_length() <= 2 * kSlack)
    return Status::error("follow the change log", "rdma-server allows reads of only " +
                                                      std::to_string(reader_.max_read_length()) +
                                                      " bytes")
        .as(ErrorKind::kBadData);
  if (!header_buf_.empty()) return {};  // registered before; the reader re-registers
  max_chunk_ = static_cast<uint32_t>(
      std::min<uint64_t>(max_chunk_, reader_.max_read_length() - kSlack));
  max_chunk_ = std::max<uint32_t>(max_chunk_, change_log::kBlockSize);
  header_buf_.resize(change_log::kHeaderSize);
  data_buf_.resize(max_chunk_ + kSlack);
  seal_buf_.resize((max_chunk_ / change_log::kBlockSize + 3) * change_log::kSealSize);
  RRS_RETURN_IF_ERROR(reader_.register_buffer(header_buf_));
  RRS_RETURN_IF_ERROR(reader_.register_buffer(data_buf_));
  return reader_.register_buffer(seal_buf_);
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
  if (!change_log::holds(before, from) || to < from || to > before.end || to - from > max_chunk_)
    return Status::error("read the change log",
                         "bad range " + std::to_string(from) + ".." + std::to_string(to));
  // The seals (one READ, two when they wrap), then the whole blocks (the
  // same; posted behind the seals, so a responder that answers in order
  // copies bytes at least as new as the seals vouch for), then the header,
  // fenced so it is read only once the rest is: the seqlock check, in one
  // round trip.
  const uint64_t begin = change_log::block_begin(before, from);
  const uint64_t end = change_log::blocks_end(before, to);
  TableRead reads[5];
  size_t count = 0;
  auto add = [&](const change_log::Segments& parts, std::span<std::byte> buf) {
    size_t filled = 0;
    for (size_t i = 0; i < parts.count; ++i) {
      reads[count] = {count + 1, parts.parts[i].offset, buf.subspan(filled, parts.parts[i].length),
                      Region::kChangeLog};
      filled += parts.parts[i].length;
      ++count;
    }
    return buf.first(filled);
  };
  auto seals = add(change_log::seal_segments(before, begin, end), seal_buf_);
  auto blocks = add(change_log::segments(before, begin, end), data_buf_);
  reads[count] = {count + 1, 0, header_buf_, Region::kChangeLog, true};
  ++count;
  for (int attempt = 1;; ++attempt) {
    RRS_RETURN_IF_ERROR(read_ranges({reads, count}));
    auto after = decode_checked(header_buf_);
    if (!after.ok()) return after.status();
    Copy c;
    c.after = *after;
    c.intact = change_log::copy_intact(before, c.after, from);
    if (!c.intact) return c;
    auto verified = change_log::verify(c.after, from, to, blocks, seals);
    if (verified.ok()) {
      // Sealed bytes are whole, but hand over only what `end` publishes.
      const uint64_t until = std::min(*verified, c.after.end);
      c.bytes = std::span<const std::byte>(blocks).subspan(from - begin,
                                                           until > from ? until - from : 0);
      return c;
    }
    if (verified.status().kind() != ErrorKind::kBadData || attempt == kCorruptReads)
      return verified.status().wrap(attempt == 1 ? "read the change log"
                                                 : "read the change log " +
                                                       std::to_string(attempt) + " times");
  }
}

}  // namespace rrs
