// A real redis-server for one test: its own loopback port and temp dir, no
// persistence, DEBUG enabled (for DEBUG DIGEST). Stopped and cleaned up with
// its owner. It forks for a full sync at once (repl-diskless-sync-delay 0).
// By default it is Debian 12's redis-server (7.0); RedisOptions::with_server
// runs another of the versions tests/servers.sh installs (server_versions()).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tls/tls_context.h"
#include "tests/support/process.h"
#include "tests/support/redis_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace rrs::test {

// One Redis/Valkey server version the tests run against: a line of
// `bash tests/servers.sh list`, "NAME BINARY VERSION", e.g.
// "redis-8.0 /var/cache/rrs-servers/redis-8.0.6-3/bin/redis-server 8.0.6".
struct TestServer {
  std::string name;     // engine-major.minor: "redis-7.0", "valkey-9.1"
  std::string binary;   // the server binary
  std::string version;  // as the binary reports it: "8.0.6"
  // "redis" or "valkey": the name up to its '-'.
  std::string engine() const { return name.substr(0, name.find('-')); }
};

// The server versions, read once per test process: from the file
// RRS_SERVERS_FILE names (tests/run.sh writes one; any file in the list's
// format will do), else from running `bash tests/servers.sh list`. `problems`
// says what is missing, one line each (what servers.sh names on stderr, a
// listed binary that is not there, a line that does not parse), "" if nothing
// is; a missing server is not in `servers`.
struct ServerList {
  std::vector<TestServer> servers;
  std::string problems;
};
const ServerList& server_versions();

// The listed server called `name`, or nullopt.
std::optional<TestServer> find_server(const std::string& name);

// Whether a missing server fails a test (CI=true: CI must run every
// version) rather than skipping it (elsewhere).
inline bool servers_required() {
  const char* ci = std::getenv("CI");
  return ci && *ci && std::string(ci) != "false" && std::string(ci) != "0";
}

// In a test body or SetUp: sets `var` (a TestServer) to the listed server
// `name`; when it is not there, skips the test (fails it under CI=true).
#define RRS_NEED_SERVER(var, name)                                                      \
  do {                                                                                  \
    if (auto rrs_found_ = ::rrs::test::find_server(name)) {                             \
      (var) = *rrs_found_;                                                              \
    } else {                                                                            \
      const std::string rrs_why_ = std::string("server ") + (name) +                    \
                                   " is not in the server list (bash tests/servers.sh " \
                                   "install); the list's problems: " +                  \
                                   ::rrs::test::server_versions().problems;             \
      if (::rrs::test::servers_required()) FAIL() << "CI=true and " << rrs_why_;        \
      GTEST_SKIP() << rrs_why_;                                                         \
    }                                                                                   \
  } while (0)

// A server that speaks only TLS: `port 0`, its tls-port on the free port,
// `tls-replication yes` and `tls-cluster yes` (its own certificate is its
// client certificate to its master and peers). The admin connection, and
// the sidecar's --redis-tls flags, present the client certificate.
struct RedisTls {
  std::string ca;    // signs the server's and the clients' certificates
  std::string cert;  // the server's (localhost, 127.0.0.1)
  std::string key;
  std::string client_cert;
  std::string client_key;
  bool auth_clients = true;  // tls-auth-clients yes: a client certificate is required
  // Whether the test's own connections verify the server's certificate:
  // false for a server given a bad one on purpose.
  bool test_verifies = true;

  // The files in `pki`'s directory: CA "ca", server "redis", client "client",
  // made by make_redis_tls().
  static RedisTls in(const TestPki& pki);
  // rdma-server's or rdma-client's flags to reach such a server.
  std::vector<std::string> sidecar_args() const;
  // The TLS the tests' own connections use.
  std::shared_ptr<const TlsContext> client_context() const;
};
// Makes the CA "ca", the server certificate "redis" and the client
// certificate "client" in `pki`, and returns them as RedisTls::in does.
RedisTls make_redis_tls(TestPki& pki);

struct RedisOptions {
  // Sets --requirepass; the admin connection AUTHs with it.
  std::string password;
  // More redis-server flags, e.g. {"--databases", "32"}.
  std::vector<std::string> extra_args;
  // A fixed port (to restart a server where its clients expect it); 0: a free one.
  uint16_t port = 0;
  // How long PING may take to answer after the spawn.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(15);
  // The server binary; "": Debian 12's redis-server, the one CMake found.
  std::string binary;
  // TLS only (port() is then the tls-port).
  std::optional<RedisTls> tls;

  // Chainable setters: RedisOptions().with_password("pw").
  RedisOptions& with_password(std::string p) {
    password = std::move(p);
    return *this;
  }
  RedisOptions& with_args(std::vector<std::string> args) {
    extra_args = std::move(args);
    return *this;
  }
  // Runs this server version (server_versions(), RRS_NEED_SERVER).
  RedisOptions& with_server(const TestServer& server) {
    binary = server.binary;
    return *this;
  }
  RedisOptions& with_tls(RedisTls t) {
    tls = std::move(t);
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
  // A new, independent connection (TLS to a TLS server).
  Result<RedisClient> connect() const {
    return RedisClient::connect(port_, opts_.password, std::chrono::seconds(30), tls_);
  }
  // The TLS this server speaks, or nullopt.
  const std::optional<RedisTls>& tls() const { return opts_.tls; }

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
  std::shared_ptr<const TlsContext> tls_;  // the admin's and connect()'s TLS, or null
  std::optional<RedisClient> admin_;       // declared last: closed before the server stops
  uint16_t port_ = 0;
  std::string start_error_;
};

// DEBUG DIGEST on a connection of the caller's own, with RedisClient's default
// 30 s timeout: for a target busy loading on a loaded 2-core machine, or a
// server restarted on the same port; "(no connection: ...)" if there is none.
std::string digest_of(const RedisProcess& redis);

}  // namespace rrs::test
