// A connected byte stream: a plain TCP socket, or TLS over one
// (common/tls/tls_stream.h). Non-blocking underneath: a call that cannot go
// on now returns 0 bytes, and wants() says which poll() events to wait for
// before trying again. A TLS stream can hold bytes it already decrypted, which
// no poll() of the socket shows: buffered() says so.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/base/clock.h"
#include "common/base/status.h"
#include "common/net/socket.h"

namespace rrs {

// What one read_some() did: `bytes` read, or the peer closed its end.
// Neither: nothing to read now (wait for wants()).
struct ReadProgress {
  size_t bytes = 0;
  bool closed = false;
};

class Stream {
 public:
  virtual ~Stream() = default;

  virtual Result<ReadProgress> read_some(std::span<char> dst) = 0;
  // Bytes written; 0: the socket is full (wait for wants()). Data given
  // again after 0 must start with the same bytes (TLS resends its record).
  virtual Result<size_t> write_some(std::string_view src) = 0;
  // The poll() events the last call that made no progress waits for.
  virtual short wants() const = 0;
  // Decrypted bytes waiting: read_some() returns them without any poll().
  virtual bool buffered() const { return false; }
  virtual int fd() const = 0;
  // "TLSv1.3 TLS_AES_256_GCM_SHA384", or "" for a plain socket.
  virtual std::string security() const { return ""; }
};

void set_nonblocking(int fd);

// The events to poll() a stream for when it is driven both ways: POLLIN,
// POLLOUT when there is more to send, and what its last stall waits for
// (TLS may need to write to read on, or read to write on).
inline short poll_events(const Stream& stream, bool more_to_send) {
  return static_cast<short>(POLLIN | (more_to_send ? POLLOUT : 0) | stream.wants());
}

// A plain TCP socket, made non-blocking.
class SocketStream final : public Stream {
 public:
  explicit SocketStream(UniqueFd fd);
  Result<ReadProgress> read_some(std::span<char> dst) override;
  Result<size_t> write_some(std::string_view src) override;
  short wants() const override { return wants_; }
  int fd() const override { return fd_.get(); }

 private:
  UniqueFd fd_;
  short wants_ = POLLIN;
};

// Waits until `stream` can make progress on what it wants(), at most until
// `deadline`: a Status naming `step` when it timed out (ETIMEDOUT).
Status wait_for(Stream& stream, Clock::time_point deadline, const std::string& step);

// How long the waits of one call may take: `each` of them, or, with a
// deadline, all of them together (a peer trickling a byte now and then
// cannot stretch the call past it).
struct WaitLimit {
  std::chrono::milliseconds each{0};
  std::optional<Clock::time_point> deadline;
  Clock::time_point next() const { return deadline ? *deadline : Clock::now() + each; }
};

// All of `data`.
Status write_all(Stream& stream, std::string_view data, const WaitLimit& limit,
                 const std::string& step);
// All of `data`, waiting at most `timeout` between bytes written.
inline Status write_all(Stream& stream, std::string_view data, std::chrono::milliseconds timeout,
                        const std::string& step) {
  return write_all(stream, data, WaitLimit{timeout, std::nullopt}, step);
}
// All of `dst`; a connection closed first is kUnavailable (ECONNRESET).
Status read_all(Stream& stream, std::span<std::byte> dst, const WaitLimit& limit,
                const std::string& step);
// At least one byte into `dst`, waiting at most until `deadline`; a closed
// connection is an error (kUnavailable) naming `step`.
Result<size_t> read_by(Stream& stream, std::span<char> dst, Clock::time_point deadline,
                       const std::string& step);

}  // namespace rrs
