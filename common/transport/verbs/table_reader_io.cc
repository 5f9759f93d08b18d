// VerbsTableReader, the data path: read buffers, posting READs, waiting for
// their completions, keepalives. Setup is in table_reader.cc.
#include <cstring>

#include "common/transport/verbs/completion_wait.h"
#include "common/transport/verbs/table_reader.h"

namespace rrs {

Status VerbsTableReader::register_buffer(std::span<std::byte> memory) {
  registered_spans_.push_back(memory);
  if (!pd_) return {};  // registered when connected
  ibv_mr* mr = ibv_reg_mr(pd_.get(), memory.data(), memory.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr)
    return Status::from_errno("register a " + std::to_string(memory.size() >> 10) +
                              " KiB read buffer (check `ulimit -l`)");
  mrs_.emplace_back(mr);
  return {};
}

void VerbsTableReader::unregister_buffer(std::span<std::byte> memory) {
  std::erase_if(registered_spans_, [&](std::span<std::byte> s) {
    return s.data() == memory.data() && s.size() == memory.size();
  });
  std::erase_if(mrs_, [&](const verbs::MemoryRegion& mr) {
    return mr->addr == memory.data() && mr->length == memory.size();
  });
}

uint32_t VerbsTableReader::lkey_for(const void* self, const std::byte* p, size_t len) {
  const auto& mrs = static_cast<const VerbsTableReader*>(self)->mrs_;
  for (auto it = mrs.rbegin(); it != mrs.rend(); ++it) {  // the newest registration wins
    auto* base = static_cast<const std::byte*>((*it)->addr);
    if (p >= base && p + len <= base + (*it)->length) return (*it)->lkey;
  }
  return 0;
}

Status VerbsTableReader::post_reads(std::span<const TableRead> batch) {
  if (broken_)
    return Status::error("post RDMA READ", "connection is broken").as(ErrorKind::kUnavailable);
  RRS_RETURN_IF_ERROR(
      session_.check_batch(batch, queue_.reads_outstanding(), max_read_len_, max_in_flight_));
  RRS_RETURN_IF_ERROR(await_readable(ClientSession::readable_end(batch)));
  const control::Descriptor& d = session_.descriptor();
  return queue_.post(qp_.get(), batch, {d.remote_addr, d.log_addr, d.rkey, d.log_rkey}, this,
                     &VerbsTableReader::lkey_for);
}

Status VerbsTableReader::check_cm_channel() {
  Status s = cm_.check_events();
  if (!s.ok()) broken_ = true;
  return s;
}

Status VerbsTableReader::fail(std::string why) {
  broken_ = true;
  if (qp_) queue_.drain(qp_.get(), cq_.get());
  reaped_early_.clear();
  return Status::error("RDMA connection to rdma-server at " + server_.to_string(), std::move(why))
      .as(ErrorKind::kUnavailable);
}

// A keepalive's answer, or a streamed epoch's grown descriptor.
Status VerbsTableReader::take_message(const ibv_wc& wc) {
  const std::span<const std::byte> message = msgs_.received(wc.wr_id, wc.byte_len);
  auto type = control::message_type(message);
  if (type.ok() && *type == control::MsgType::kError) {
    // The server tells why before it disconnects (a streamed epoch withdrawn:
    // "epoch gone").
    return ClientSession::server_error_frame(message);
  }
  if (type.ok() && *type == control::MsgType::kDescriptor) {
    RRS_RETURN_IF_ERROR(session_.on_grown(message));
  } else {
    auto seq = control::decode_keepalive(message, control::MsgType::kKeepaliveAck);
    if (!seq.ok())
      return Status::error("keepalive", "server sent a bad message: " + seq.status().reason());
    if (*seq == keepalive_seq_) {
      keepalive_acked_ = *seq;
      heard_at_ = Clock::now();
    }
  }
  if (msgs_.post_recv(qp_.get(), verbs::wr_id::slot_of(wc.wr_id)) != 0)
    return Status::error("receive", "could not post a receive");
  return {};
}

Status VerbsTableReader::reap(std::vector<uint64_t>& done) {
  Status s = queue_.reap(cq_.get(), done, [this](const ibv_wc& wc) { return take_message(wc); });
  return s.ok() ? s : fail(s.reason());
}

// A streamed epoch is readable up to what the server registered so far: a
// READ past that would fail the connection, so it waits for the grown
// descriptor (the server registers a step ahead of its writer, so this is
// rare), reaping READs already posted meanwhile.
Status VerbsTableReader::await_readable(uint64_t end) {
  if (end <= session_.descriptor().readable_length) return {};
  auto take = [&]() -> Result<bool> {
    RRS_RETURN_IF_ERROR(reap(reaped_early_));
    RRS_RETURN_IF_ERROR(tick());
    return end <= session_.descriptor().readable_length;
  };
  auto timed_out = [&] {
    return Status::error("RDMA READ from " + server_.to_string(),
                         "rdma-server registered no more than " +
                             std::to_string(session_.descriptor().readable_length) +
                             " bytes of epoch " + std::to_string(session_.descriptor().epoch) +
                             " within " + std::to_string(io_timeout_.count()) + " ms (" +
                             std::to_string(end) + " needed)",
                         ETIMEDOUT)
        .as(ErrorKind::kUnavailable);
  };
  const auto max_sleep = keepalive_interval_.count() > 0 ? keepalive_interval_
                                                         : std::chrono::milliseconds::max();
  return verbs::wait_for_completions(
      cq_, comp_channel_.get(), cm_.fd(), Clock::now() + io_timeout_, max_sleep, take,
      [this] { return check_cm_channel(); }, timed_out);
}

Status VerbsTableReader::tick() {
  if (keepalive_interval_.count() == 0) return {};
  const auto now = Clock::now();
  if (now - heard_at_ > keepalive_interval_ * control::kKeepaliveMisses)
    return fail(
        "rdma-server answered no keepalive for " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(now - heard_at_).count()) +
        " ms");
  // One outstanding at a time; the next is due an interval after the last.
  if (keepalive_acked_ != keepalive_seq_ || now - keepalive_sent_at_ < keepalive_interval_)
    return {};
  if (int rc = msgs_.post_send(
          qp_.get(), control::encode_keepalive(control::MsgType::kKeepalive, keepalive_seq_ + 1),
          verbs::wr_id::kKeepalive);
      rc != 0)
    return fail(std::string("could not send a keepalive: ") + std::strerror(rc));
  if (!queue_.note_send(verbs::wr_id::kKeepalive)) return fail("send queue overflow");
  ++keepalive_seq_;
  keepalive_sent_at_ = now;
  return {};
}

Status VerbsTableReader::keepalive() {
  if (broken_)
    return Status::error("keepalive", "connection is broken").as(ErrorKind::kUnavailable);
  RRS_RETURN_IF_ERROR(reap(reaped_early_));
  RRS_RETURN_IF_ERROR(check_cm_channel());
  return tick();
}

// Reaps, sends a keepalive when due, and sleeps on the CQ and the CM channel
// (waking for the next keepalive) until a READ completes; a DISCONNECTED or
// DEVICE_REMOVAL on the CM channel fails the call at once.
Status VerbsTableReader::poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) {
  if (broken_)
    return Status::error("poll RDMA READs", "connection is broken").as(ErrorKind::kUnavailable);
  const size_t before = done.size();
  done.insert(done.end(), reaped_early_.begin(), reaped_early_.end());
  reaped_early_.clear();
  auto take = [&]() -> Result<bool> {
    RRS_RETURN_IF_ERROR(reap(done));
    RRS_RETURN_IF_ERROR(tick());
    return done.size() > before || queue_.reads_outstanding() == 0;
  };
  auto timed_out = [&] {
    return Status::error("RDMA READ from " + server_.to_string(),
                         "no completion within " + std::to_string(timeout.count()) + " ms",
                         ETIMEDOUT)
        .as(ErrorKind::kUnavailable);
  };
  const auto max_sleep = keepalive_interval_.count() > 0 ? keepalive_interval_
                                                         : std::chrono::milliseconds::max();
  return verbs::wait_for_completions(
      cq_, comp_channel_.get(), cm_.fd(), Clock::now() + timeout, max_sleep, take,
      [this] { return check_cm_channel(); }, timed_out);
}

}  // namespace rrs
