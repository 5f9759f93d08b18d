// TableReader over TCP: READ requests on the control connection, answered
// with READ_DATA frames whose bodies land directly in the caller's buffers.
// Requests are pipelined up to the server's max_in_flight. With TLS (--tls)
// the connection is TLS 1.3 and the control protocol runs inside it, the
// shared-secret handshake included.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/net/endpoint.h"
#include "common/net/socket.h"
#include "common/net/stream.h"
#include "common/tls/tls_context.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"

namespace rrs {

class TcpTableReader final : public TableReader {
 public:
  // `io_timeout` bounds every wait on the server once connected, and the
  // handshake as a whole (as does connect()'s deadline). With a
  // `secret`, the server must ask for it and prove it holds it too. With
  // `tls` (a client context for TlsWire::kTransport), the server's
  // certificate must hold the host connected to (or the context's sni).
  TcpTableReader(Endpoint server, std::chrono::milliseconds io_timeout,
                 std::optional<std::string> secret = std::nullopt,
                 std::shared_ptr<const TlsContext> tls = nullptr);

  Status connect(Clock::time_point deadline) override;
  const control::Descriptor& descriptor() const override { return session_.descriptor(); }
  uint32_t max_read_length() const override { return session_.hello_ok().max_read_len; }
  uint32_t max_in_flight() const override { return session_.hello_ok().max_in_flight; }
  Status register_buffer(std::span<std::byte>) override { return {}; }
  void unregister_buffer(std::span<std::byte>) override {}
  Status post_reads(std::span<const TableRead> batch) override;
  Status poll(std::vector<uint64_t>& done, std::chrono::milliseconds timeout) override;
  // TCP's own keepalive (enable_tcp_keepalive) covers a silent connection.
  Status keepalive() override { return {}; }
  void set_log_only(bool on) override { session_.set_log_only(on); }

 private:
  struct Pending {
    uint64_t id;
    std::span<std::byte> dst;
  };
  Status handshake(Clock::time_point deadline);
  // A TCP connection, with TLS over it when tls_ is set.
  Status open_stream(std::chrono::milliseconds attempt, Clock::time_point deadline);
  // Reads one frame header; the body is left for the caller. `timeout`
  // bounds each wait; without one (the handshake), the session's deadline
  // bounds the whole read.
  Result<control::FrameHeader> read_frame_header(std::optional<std::chrono::milliseconds> timeout);
  Status receive(std::span<std::byte> dst, std::optional<std::chrono::milliseconds> timeout);
  // Handshake reads, by the session's deadline.
  Status read_expected(control::MsgType want, std::span<std::byte> body);
  Status server_error(uint32_t body_len, std::optional<std::chrono::milliseconds> timeout);

  Endpoint server_;
  std::chrono::milliseconds io_timeout_;
  ClientSession session_;
  std::shared_ptr<const TlsContext> tls_;  // null: plain TCP
  std::unique_ptr<Stream> stream_;
  std::string out_;  // requests posted but not yet sent
  std::unordered_map<uint32_t, Pending> pending_;
  uint32_t next_request_id_ = 1;
};

}  // namespace rrs
