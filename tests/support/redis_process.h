// A real redis-server for one test: its own loopback port and temp dir, no
// persistence, DEBUG enabled (for DEBUG DIGEST). Stopped and cleaned up with
// its owner. It forks for a full sync at once (repl-diskless-sync-delay 0).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/redis_client.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {

struct RedisOptions {
  // Sets --requirepass; the admin connection AUTHs with it.
  std::string password;
  // More redis-server flags, e.g. {"--databases", "32"}.
  std::vector<std::string> extra_args;
  // A fixed port (to restart a server where its clients expect it); 0: a free one.
  uint16_t port = 0;
  // How long PING may take to answer after the spawn.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(15);

  // Chainable setters: RedisOptions().with_password("pw").
  RedisOptions& with_password(std::string p) {
    password = std::move(p);
    return *this;
  }
  RedisOptions& with_args(std::vector<std::string> args) {
    extra_args = std::move(args);
    return *this;
  }
};

class RedisProcess {
 public:
  // Starts the server and waits for PING. Check started() before use:
  //   RedisProcess redis;
  //   ASSERT_TRUE(redis.started()) << redis.start_error();
  explicit RedisProcess(RedisOptions opts = {});
  // SIGTERM, then SIGKILL after 5 s; removes the temp dir.
  ~RedisProcess();
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;

  bool started() const { return admin_.has_value(); }
  const std::string& start_error() const { return start_error_; }

  uint16_t port() const { return port_; }
  // "127.0.0.1:PORT", as --redis takes it.
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& password() const { return opts_.password; }
  const TempDir& dir() const { return dir_; }
  // The server's own log (it logs to stdout).
  std::string log() const { return server_ ? server_->stdout_text() : ""; }

  // The admin connection (authenticated). Its selected DB is whatever the
  // last select() left; helpers below that need a DB select it themselves.
  RedisClient& client() { return *admin_; }
  // A new, independent connection.
  Result<RedisClient> connect() const { return RedisClient::connect(port_, opts_.password); }

  Reply command(const std::vector<std::string>& argv) { return admin_->command(argv); }
  Reply run(const std::vector<std::string>& argv) { return admin_->run(argv); }
  std::string digest() { return admin_->digest(); }
  Keyspace keyspace() { return admin_->keyspace(); }
  // One field of an INFO section ("" if absent).
  std::string info_field(const std::string& section, const std::string& field) {
    return admin_->info_field(section, field);
  }
  // The same on a connection of the caller's own (RedisClient's default 30 s
  // timeout): for a server busy loading, or one the test may have killed.
  std::string fresh_info_field(const std::string& section, const std::string& field) const;

  // SIGKILLs the server (our child: its pid cannot be reused before it is
  // reaped). The object stays, dead, until its scope ends.
  void kill();

 private:
  bool try_start(std::string& error);

  RedisOptions opts_;
  TempDir dir_;  // declared first: removed only after the server has stopped
  std::optional<Process> server_;
  std::optional<RedisClient> admin_;  // declared last: closed before the server stops
  uint16_t port_ = 0;
  std::string start_error_;
};

// DEBUG DIGEST on a connection of the caller's own, with RedisClient's default
// 30 s timeout: for a target busy loading on a loaded 2-core machine, or a
// server restarted on the same port; "(no connection: ...)" if there is none.
std::string digest_of(const RedisProcess& redis);

}  // namespace rrs::test
