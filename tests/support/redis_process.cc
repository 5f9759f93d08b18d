#include "tests/support/redis_process.h"

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "tests/support/ports.h"

#ifndef RRS_REDIS_SERVER_BIN
#define RRS_REDIS_SERVER_BIN "redis-server"
#endif

namespace rrs::test {
namespace {

// Another test may take the port between our probe and redis-server's bind.
constexpr int kStartAttempts = 5;

}  // namespace

RedisProcess::RedisProcess(RedisOptions opts) : opts_(std::move(opts)), dir_("redis") {
  for (int attempt = 1; attempt <= kStartAttempts; ++attempt) {
    std::string error;
    if (try_start(error)) return;
    start_error_ += "attempt " + std::to_string(attempt) + ": " + error + "\n";
    bool port_taken = error.find("Address already in use") != std::string::npos;
    if (!port_taken) return;
    // A fixed port (a restart) may still be held by the one that just stopped.
    if (opts_.port) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

RedisProcess::~RedisProcess() {
  admin_.reset();
  if (server_) server_->terminate(std::chrono::seconds(5));
}

bool RedisProcess::try_start(std::string& error) {
  port_ = opts_.port ? opts_.port : free_loopback_port();
  std::vector<std::string> argv = {RRS_REDIS_SERVER_BIN, "--port", std::to_string(port_), "--bind",
                                   "127.0.0.1", "--dir", dir_.path(), "--save", "", "--appendonly",
                                   "no", "--enable-debug-command", "yes",
                                   // As a master serving the sidecar should be set: fork for a
                                   // full sync at once, not 5 s later waiting for more replicas.
                                   "--repl-diskless-sync-delay", "0", "--daemonize", "no",
                                   "--logfile", ""};
  if (!opts_.password.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(opts_.password);
  }
  argv.insert(argv.end(), opts_.extra_args.begin(), opts_.extra_args.end());
  server_.emplace(std::move(argv));

  auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!server_->running()) {
      server_->wait(std::chrono::seconds(1));
      error = "redis-server exited early:\n" + server_->describe();
      server_.reset();
      return false;
    }
    auto c = RedisClient::connect(port_, opts_.password, std::chrono::seconds(2));
    if (c.ok()) {
      Reply pong = c->command({"PING"});
      if (pong && pong->type == REDIS_REPLY_STATUS) {
        // 2 s was for start-up polling; DEBUG DIGEST of a big dataset needs more.
        c->set_timeout(std::chrono::seconds(60));
        admin_.emplace(std::move(c.value()));
        return true;
      }
      last = to_string(pong);
    } else {
      last = c.status().message();
    }
    // Polling is the only readiness signal redis-server gives a plain client.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error = "no PONG within " + std::to_string(opts_.start_timeout.count()) + " ms (last: " + last +
          ")\n" + server_->describe();
  server_->terminate(std::chrono::seconds(5));
  server_.reset();
  return false;
}

std::string RedisProcess::fresh_info_field(const std::string& section,
                                           const std::string& field) const {
  auto c = connect();
  return c.ok() ? c->info_field(section, field) : "";
}

void RedisProcess::kill() {
  if (!server_) {
    ADD_FAILURE() << "kill(): redis-server on port " << port_ << " is not running";
    return;
  }
  server_->signal(SIGKILL);
}

std::string digest_of(const RedisProcess& redis) {
  auto c = redis.connect();
  if (!c.ok()) return "(no connection: " + c.status().message() + ")";
  return c->digest();
}

}  // namespace rrs::test
