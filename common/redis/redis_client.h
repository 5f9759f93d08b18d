// A blocking connection to a Redis server, plain or TLS: connect with a
// timeout, AUTH from a file or environment variable (never argv), commands
// and pipelining ("append, then get"). The bytes go through a Stream
// (common/net/stream.h); hiredis only formats commands and parses replies.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/net/endpoint.h"
#include "common/net/stream.h"
#include "common/tls/tls_context.h"

namespace rrs {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// How to reach and log in to Redis: the AUTH user and password, and TLS
// (the CA to trust, the client certificate) when the servers want it.
struct RedisCredentials {
  std::string user;                       // empty: the default user
  std::string password;                   // empty: no AUTH
  std::string origin;                     // where they came from, for error messages
  std::shared_ptr<const TlsContext> tls;  // null: plain TCP
  std::string tls_flag = "--redis-tls";   // how TLS is asked for, for hints
};

// Reads "password" or "user password" from the first line of `file` if given,
// else from the environment variable `env_var`; empty credentials if neither.
// A file that cannot be read or holds no password is kUsage.
Result<RedisCredentials> load_credentials(const std::string& file, const char* env_var);
// The same, with TLS as `tls` says when it is enabled: its files are read
// now, and a bad one is kUsage.
Result<RedisCredentials> load_credentials(const std::string& file, const char* env_var,
                                          const TlsOptions& tls);

class RedisClient {
 public:
  static Result<RedisClient> connect(const Endpoint& at, const RedisCredentials& creds,
                                     std::chrono::milliseconds timeout);
  RedisClient(RedisClient&&) noexcept = default;
  RedisClient& operator=(RedisClient&&) noexcept = default;

  // One command; an error reply becomes a failed Result naming the command.
  Result<ReplyPtr> command(const std::vector<std::string_view>& argv);
  // Pipelining: append any number of commands, then get their replies in order.
  // Error replies are returned as replies here; the caller decides.
  void append(std::span<const std::string_view> argv);
  void append(const std::vector<std::string_view>& argv) { append(std::span(argv)); }
  Result<ReplyPtr> get_reply();
  // Writes every appended command to the socket without waiting for replies
  // (get_reply() would write them first anyway); blocks only while the
  // socket's buffer is full.
  Status send_appended();

  // INFO <section> parsed into "field:value" lookups.
  Result<std::string> info(std::string_view section);
  const Endpoint& endpoint() const { return at_; }
  // Bounds each later wait for the server (connect took its own).
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  // The connection, for those who drive it themselves (a pipeline polled
  // with others): only once every reply asked for here has been read.
  Stream& stream() { return *stream_; }
  int fd() const { return stream_->fd(); }

 private:
  struct ReaderFree {
    void operator()(redisReader* r) const { redisReaderFree(r); }
  };
  RedisClient(Endpoint at, std::unique_ptr<Stream> stream, std::chrono::milliseconds timeout);
  Status io_error(const std::string& step, const Status& cause) const;

  Endpoint at_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<redisReader, ReaderFree> reader_;
  std::string out_;  // commands appended, not yet written
  std::chrono::milliseconds timeout_;
};

// A TCP connection to `at`, with TLS over it when `creds` say so: the
// stream RedisClient and the replication links run over.
Result<std::unique_ptr<Stream>> connect_stream(const Endpoint& at, const RedisCredentials& creds,
                                               std::chrono::milliseconds timeout);

// Value of `field` in an INFO text ("field:value\r\n"), or empty.
std::string info_field(std::string_view info, std::string_view field);

// Per-DB counts from INFO keyspace ("db0:keys=3,expires=1,avg_ttl=0").
struct KeyspaceDb {
  uint32_t db = 0;
  uint64_t keys = 0;
  uint64_t expires = 0;
};
std::vector<KeyspaceDb> parse_keyspace(std::string_view info);

}  // namespace rrs
