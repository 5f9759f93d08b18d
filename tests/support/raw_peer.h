// A hand-driven TCP peer of rdma-server for robustness tests: sends any bytes
// (valid frames built with proto/control.h, or garbage) and reads the answers
// frame by frame, with deadlines, so a misbehaving server fails the test
// instead of hanging it. Over TLS too, for a server with --tls: the frames
// inside are just as hostile.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/net/stream.h"
#include "common/tls/tls_context.h"
#include "proto/control.h"

namespace rrs::test {

class RawPeer {
 public:
  // To 127.0.0.1:`port`, from the loopback address `from` (any of 127/8:
  // another "host" for a server's per-address limits); with `tls` (a client
  // context), through a TLS handshake first.
  static Result<RawPeer> connect(uint16_t port, const char* from = "127.0.0.1",
                                 const TlsContext* tls = nullptr);

  // Writes all of `bytes`. False once the server has closed the connection
  // (a close-on-garbage server may do so before we finish).
  bool send(std::string_view bytes);

  struct Frame {
    control::FrameHeader header;
    std::string body;
  };
  enum class Got {
    kFrame,    // a whole frame is in `out`
    kClosed,   // EOF or reset before a whole frame
    kTimeout,  // nothing conclusive before the deadline
    kGarbage,  // bytes that are not a frame header
  };
  // Reads one frame (bodies up to control::kMaxReadLength).
  Got read_frame(Frame& out, std::chrono::milliseconds timeout);

  // Reads until EOF or reset; true if that happened within `timeout`.
  // Bytes read on the way are appended to `received`.
  bool wait_closed(std::chrono::milliseconds timeout, std::string* received = nullptr);

  // HELLO, AUTH with the suite's secret if asked, then GET_DESCRIPTOR, as
  // rdma-client starts.
  Result<control::Descriptor> handshake(std::chrono::milliseconds timeout);

 private:
  explicit RawPeer(std::unique_ptr<Stream> stream) : stream_(std::move(stream)) {}
  enum class Io { kOk, kClosed, kTimeout };
  // Some bytes into `buf` (appended), by `deadline`.
  Io read_some(std::string& buf, size_t most, Clock::time_point deadline);
  Io read_exact(std::string& buf, size_t n, Clock::time_point deadline);

  std::unique_ptr<Stream> stream_;
};

const char* to_string(RawPeer::Got g);

}  // namespace rrs::test
