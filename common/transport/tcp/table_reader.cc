#include "common/transport/tcp/table_reader.h"

#include <poll.h>

#include <algorithm>

#include "common/base/log.h"
#include "common/tls/tls_stream.h"

namespace rrs {

using control::MsgType;

namespace {
// Largest frame body a server may send us: a READ_DATA or an ERROR.
constexpr uint32_t kMaxServerBody = std::max<uint32_t>(
    control::kMaxReadLength, control::kErrorFixedSize + control::kMaxErrorText);
}  // namespace

TcpTableReader::TcpTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                               std::optional<std::string> secret,
                               std::shared_ptr<const TlsContext> tls)
    : server_(std::move(server)),
      io_timeout_(io_timeout),
      session_(std::move(secret)),
      tls_(std::move(tls)) {}

Status TcpTableReader::open_stream(std::chrono::milliseconds attempt, Clock::time_point deadline) {
  auto fd = tcp_connect(server_, attempt);
  if (!fd.ok())
    return fd.status()
        .wrap("could not reach rdma-server (retried until --connect-timeout)")
        .as(ErrorKind::kUnavailable);
  if (!tls_) {
    stream_ = std::make_unique<SocketStream>(std::move(*fd));
    return {};
  }
  auto tls = TlsStream::connect(std::move(*fd), *tls_, server_.host,
                                "rdma-server at " + server_.to_string(), deadline);
  if (!tls.ok()) return tls.status();
  log::info("transport: TLS with rdma-server at " + server_.to_string() + " (" + (*tls)->summary() +
            ")");
  stream_ = std::move(*tls);
  return {};
}

// One deadline for the whole call: every attempt, and every wait of every
// handshake, ends by it (a server trickling a byte now and then cannot hold
// us past --connect-timeout). A first attempt gets at least kMinAttempt.
Status TcpTableReader::connect(Clock::time_point deadline) {
  constexpr auto kMinAttempt = std::chrono::milliseconds(1000);
  deadline = std::max(deadline, Clock::now() + kMinAttempt);
  stream_.reset();
  out_.clear();
  pending_.clear();  // reads of a previous connection are lost with it
  return connect_with_backoff(deadline, [&](Clock::time_point until) -> Status {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    auto attempt = std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(2000));
    const auto handshake_by = std::min(until, Clock::now() + io_timeout_);
    RRS_RETURN_IF_ERROR(open_stream(attempt, handshake_by));
    return handshake(handshake_by).wrap("handshake with rdma-server at " + server_.to_string());
  });
}

// HELLO, then (if the server asks) AUTH, then GET_DESCRIPTOR: the server
// reveals nothing about the table before the proof is checked. The session
// decides; this only moves frames, each wait bounded by the session's deadline.
Status TcpTableReader::handshake(Clock::time_point deadline) {
  RRS_ASSIGN_OR_RETURN(control::Hello hello_msg, session_.start(deadline));
  std::string out;
  control::append_hello(out, 0, hello_msg);
  RRS_RETURN_IF_ERROR(write_all(*stream_, out, WaitLimit{{}, deadline}, "send"));

  std::byte hello[control::kHelloOkSize];
  RRS_RETURN_IF_ERROR(read_expected(MsgType::kHelloOk, hello));
  auto proof = session_.on_hello_ok(hello);
  if (!proof.ok()) return proof.status();
  out.clear();
  if (*proof) control::append_auth(out, 0, MsgType::kAuth, **proof);
  control::append_get_descriptor(out, 0);
  RRS_RETURN_IF_ERROR(write_all(*stream_, out, WaitLimit{{}, deadline}, "send"));
  if (*proof) {
    std::byte server_proof[control::kAuthSize];
    RRS_RETURN_IF_ERROR(read_expected(MsgType::kAuthOk, server_proof));
    RRS_RETURN_IF_ERROR(session_.on_auth_ok(server_proof));
  }

  std::byte desc[control::kDescriptorSize];
  RRS_RETURN_IF_ERROR(read_expected(MsgType::kDescriptor, desc));
  return session_.on_descriptor(desc, control::TransportKind::kTcp);
}

Result<control::FrameHeader> TcpTableReader::read_frame_header(
    std::optional<std::chrono::milliseconds> timeout) {
  std::byte raw[control::kFrameHeaderSize];
  if (Status s = receive(raw, timeout); !s.ok()) return s.wrap("read from rdma-server");
  auto h = control::decode_frame_header(raw, kMaxServerBody);
  if (!h.ok()) return h.status().as(ErrorKind::kBadData);
  return h;
}

Status TcpTableReader::receive(std::span<std::byte> dst,
                               std::optional<std::chrono::milliseconds> timeout) {
  Status s = read_all(
      *stream_, dst,
      timeout ? WaitLimit{*timeout, std::nullopt} : WaitLimit{{}, session_.deadline()}, "receive");
  if (!s.ok() && !timeout && s.sys_errno() == ETIMEDOUT)
    s = Status::error("receive", "the handshake did not finish within --connect-timeout",
                      ETIMEDOUT);
  return s.as(ErrorKind::kUnavailable);
}

Status TcpTableReader::server_error(uint32_t body_len,
                                    std::optional<std::chrono::milliseconds> timeout) {
  std::string body(body_len, '\0');
  RRS_RETURN_IF_ERROR(receive(std::as_writable_bytes(std::span(body)), timeout));
  return ClientSession::server_error_body(std::as_bytes(std::span(body)));
}

Status TcpTableReader::read_expected(MsgType want, std::span<std::byte> body) {
  auto h = read_frame_header(std::nullopt);
  if (!h.ok()) return h.status();
  if (h->type == MsgType::kError) return server_error(h->body_len, std::nullopt);
  if (h->type != want || h->body_len != body.size())
    return Status::error("read from rdma-server",
                         "unexpected message (type " + std::to_string(static_cast<int>(h->type)) +
                             ", " + std::to_string(h->body_len) + " bytes; expected type " +
                             std::to_string(static_cast<int>(want)) + ", " +
                             std::to_string(body.size()) +
                             " bytes): is rdma-server of another version?")
        .as(ErrorKind::kBadData);
  return receive(body, std::nullopt);
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
    RRS_RETURN_IF_ERROR(write_all(*stream_, out_, io_timeout_, "send")
                            .wrap("send read requests to rdma-server")
                            .as(ErrorKind::kUnavailable));
    out_.clear();
  }
  size_t before = done.size();
  while (!pending_.empty()) {
    // Block for the first completion; afterwards take only what is already here.
    if (done.size() > before && !stream_->buffered()) {
      pollfd p{stream_->fd(), poll_events(*stream_, false), 0};
      if (::poll(&p, 1, 0) <= 0) break;
    }
    auto h = read_frame_header(done.size() > before ? io_timeout_ : timeout);
    if (!h.ok()) return h.status();
    if (h->type == MsgType::kError) return server_error(h->body_len, io_timeout_);
    auto it = pending_.find(h->request_id);
    if (h->type != MsgType::kReadData || it == pending_.end() ||
        h->body_len != it->second.dst.size())
      return Status::error("read from rdma-server", "answer does not match any request")
          .as(ErrorKind::kBadData);
    RRS_RETURN_IF_ERROR(
        read_all(*stream_, it->second.dst, WaitLimit{io_timeout_, std::nullopt}, "receive")
            .wrap("read table bytes from rdma-server")
            .as(ErrorKind::kUnavailable));
    done.push_back(it->second.id);
    pending_.erase(it);
  }
  return {};
}

}  // namespace rrs
