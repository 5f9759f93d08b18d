// A blocking connection to a Redis server over hiredis: connect with a
// timeout, AUTH from a file or environment variable (never argv), commands
// and pipelining ("append, then get"). Owns the redisContext.
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

namespace rrs {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

struct RedisCredentials {
  std::string user;      // empty: the default user
  std::string password;  // empty: no AUTH
  std::string origin;    // where they came from, for error messages
};

// Reads "password" or "user password" from the first line of `file` if given,
// else from the environment variable `env_var`; empty credentials if neither.
// A file that cannot be read or holds no password is kUsage.
Result<RedisCredentials> load_credentials(const std::string& file, const char* env_var);

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
  int fd() const { return ctx_->fd; }

 private:
  struct CtxDeleter {
    void operator()(redisContext* c) const { redisFree(c); }
  };
  RedisClient(Endpoint at, redisContext* c) : at_(std::move(at)), ctx_(c) {}
  Status io_error(const std::string& step) const;

  Endpoint at_;
  std::unique_ptr<redisContext, CtxDeleter> ctx_;
};

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
