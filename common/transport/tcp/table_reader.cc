#include "common/transport/tcp/table_reader.h"

#include <poll.h>

#include <algorithm>

namespace rrs {

using control::MsgType;

namespace {
// Largest frame body a server may send us: a READ_DATA or an ERROR.
constexpr uint32_t kMaxServerBody = std::max<uint32_t>(
    control::kMaxReadLength, control::kErrorFixedSize + control::kMaxErrorText);
}  // namespace

TcpTableReader::TcpTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                               std::optional<std::string> secret)
    : server_(std::move(server)), io_timeout_(io_timeout), session_(std::move(secret)) {}

Status TcpTableReader::connect(Clock::time_point deadline) {
  fd_.reset();
  out_.clear();
  pending_.clear();  // reads of a previous connection are lost with it
  return connect_with_backoff(deadline, [&]() -> Status {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto attempt = std::clamp(left, std::chrono::milliseconds(100),
                              std::chrono::milliseconds(2000));
    auto fd = tcp_connect(server_, attempt);
    if (!fd.ok())
      return fd.status()
          .wrap("could not reach rdma-server (retried until --connect-timeout)")
          .as(ErrorKind::kUnavailable);
    fd_ = std::move(*fd);
    // A peer that accepts but never answers must not outlast --connect-timeout.
    auto budget = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                 Clock::now()),
                           std::chrono::milliseconds(1000));
    return handshake(std::min(budget, io_timeout_))
        .wrap("handshake with rdma-server at " + server_.to_string());
  });
}

// HELLO, then (if the server asks) AUTH, then GET_DESCRIPTOR: the server
// reveals nothing about the table before the proof is checked. The session
// decides; this only moves frames.
Status TcpTableReader::handshake(std::chrono::milliseconds timeout) {
  RRS_ASSIGN_OR_RETURN(control::Hello hello_msg, session_.start());
  std::string out;
  control::append_hello(out, 0, hello_msg);
  RRS_RETURN_IF_ERROR(send_all(fd_.get(), out, timeout).as(ErrorKind::kUnavailable));

  std::byte hello[control::kHelloOkSize];
  RRS_RETURN_IF_ERROR(read_expected(MsgType::kHelloOk, hello, timeout));
  auto proof = session_.on_hello_ok(hello);
  if (!proof.ok()) return proof.status();
  out.clear();
  if (*proof) control::append_auth(out, 0, MsgType::kAuth, **proof);
  control::append_get_descriptor(out, 0);
  RRS_RETURN_IF_ERROR(send_all(fd_.get(), out, timeout).as(ErrorKind::kUnavailable));
  if (*proof) {
    std::byte server_proof[control::kAuthSize];
    RRS_RETURN_IF_ERROR(read_expected(MsgType::kAuthOk, server_proof, timeout));
    RRS_RETURN_IF_ERROR(session_.on_auth_ok(server_proof));
  }

  std::byte desc[control::kDescriptorSize];
  RRS_RETURN_IF_ERROR(read_expected(MsgType::kDescriptor, desc, timeout));
  return session_.on_descriptor(desc, control::TransportKind::kTcp);
}

Result<control::FrameHeader> TcpTableReader::read_frame_header(std::chrono::milliseconds timeout) {
  std::byte raw[control::kFrameHeaderSize];
  if (Status s = recv_all(fd_.get(), raw, timeout); !s.ok())
    return s.wrap("read from rdma-server").as(ErrorKind::kUnavailable);
  auto h = control::decode_frame_header(raw, kMaxServerBody);
  if (!h.ok()) return h.status().as(ErrorKind::kBadData);
  return h;
}

Status TcpTableReader::server_error(uint32_t body_len) {
  std::string body(body_len, '\0');
  auto span = std::as_writable_bytes(std::span(body));
  RRS_RETURN_IF_ERROR(recv_all(fd_.get(), span, io_timeout_).as(ErrorKind::kUnavailable));
  return ClientSession::server_error_body(std::as_bytes(std::span(body)));
}

Status TcpTableReader::read_expected(MsgType want, std::span<std::byte> body,
                                     std::chrono::milliseconds timeout) {
  auto h = read_frame_header(timeout);
  if (!h.ok()) return h.status();
  if (h->type == MsgType::kError) return server_error(h->body_len);
  if (h->type != want || h->body_len != body.size())
    return Status::error("read from rdma-server",
                         "unexpected message (type " + std::to_string(static_cast<int>(h->type)) +
                             ", " + std::to_string(h->body_len) + " bytes; expected type " +
                             std::to_string(static_cast<int>(want)) + ", " +
                             std::to_string(body.size()) +
                             " bytes): is rdma-server of another version?")
        .as(ErrorKind::kBadData);
  return recv_all(fd_.get(), body, timeout).as(ErrorKind::kUnavailable);
}

Status TcpTableReader::post_reads(std::span<const TableRead> batch) {
  RRS_RETURN_IF_ERROR(
      session_.check_batch(batch, pending_.size(), max_read_length(), max_in_flight()));
  const control::Descriptor& d = session_.descriptor();
  for (const TableRead& r : batch) {
    uint32_t rid = next_request_id_++;
    const bool log = r.region == control::Region::kChangeLog;
    control::append_read(out_, rid,
                         {log ? d.log_id : d.epoch, r.offset, static_cast<uint32_t>(r.dst.size()),
                          r.region});
    pending_.emplace(rid, Pending{r.id, r.dst});
  }
  return {};
}

Status TcpTableReader::poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) {
  if (!out_.empty()) {
    RRS_RETURN_IF_ERROR(send_all(fd_.get(), out_, io_timeout_)
                            .wrap("send read requests to rdma-server")
                            .as(ErrorKind::kUnavailable));
    out_.clear();
  }
  size_t before = done.size();
  while (!pending_.empty()) {
    // Block for the first completion; afterwards take only what is already here.
    if (done.size() > before) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) break;
    }
    auto h = read_frame_header(done.size() > before ? io_timeout_ : timeout);
    if (!h.ok()) return h.status();
    if (h->type == MsgType::kError) return server_error(h->body_len);
    auto it = pending_.find(h->request_id);
    if (h->type != MsgType::kReadData || it == pending_.end() ||
        h->body_len != it->second.dst.size())
      return Status::error("read from rdma-server", "answer does not match any request")
          .as(ErrorKind::kBadData);
    RRS_RETURN_IF_ERROR(recv_all(fd_.get(), it->second.dst, io_timeout_)
                            .wrap("read table bytes from rdma-server")
                            .as(ErrorKind::kUnavailable));
    done.push_back(it->second.id);
    pending_.erase(it);
  }
  return {};
}

}  // namespace rrs
