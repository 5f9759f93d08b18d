#include "tests/support/redis_process.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/ports.h"

#ifndef RRS_REDIS_SERVER_BIN
#define RRS_REDIS_SERVER_BIN "redis-server"
#endif
#ifndef RRS_SERVERS_SCRIPT
#define RRS_SERVERS_SCRIPT "tests/servers.sh"
#endif

namespace rrs::test {
namespace {

// Another test may take the port between our probe and redis-server's bind.
constexpr int kStartAttempts = 5;

// Parses the list's lines into `list`; a line that is not "NAME BINARY
// VERSION", or whose binary is not there, goes to its problems. `source` names
// where the lines came from, for those messages.
void parse_server_list(const std::string& lines, const std::string& source, ServerList& list) {
  std::istringstream in(lines);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    TestServer s;
    std::string extra;
    if (!(fields >> s.name >> s.binary >> s.version) || (fields >> extra) ||
        s.name.find('-') == std::string::npos) {
      list.problems += source + ": not a \"NAME BINARY VERSION\" line: " + line + "\n";
      continue;
    }
    if (access(s.binary.c_str(), X_OK) != 0) {
      list.problems += source + " lists " + s.name + " at " + s.binary + ", which is not there\n";
      continue;
    }
    list.servers.push_back(std::move(s));
  }
}

ServerList read_server_list() {
  ServerList list;
  if (const char* file = std::getenv("RRS_SERVERS_FILE"); file && *file) {
    std::ifstream in(file);
    if (!in) {
      list.problems = std::string("RRS_SERVERS_FILE=") + file + " cannot be read\n";
      return list;
    }
    std::stringstream text;
    text << in.rdbuf();
    parse_server_list(text.str(), std::string("RRS_SERVERS_FILE=") + file, list);
  } else {
    CommandResult r = run_command({"bash", RRS_SERVERS_SCRIPT, "list"});
    parse_server_list(r.out, "tests/servers.sh list", list);
    // It names each missing server on stderr and exits 1.
    if (r.code != 0) list.problems += r.error;
  }
  if (list.servers.empty() && list.problems.empty()) list.problems = "the server list is empty\n";
  return list;
}

}  // namespace

const ServerList& server_versions() {
  static const ServerList list = read_server_list();
  return list;
}

std::optional<TestServer> find_server(const std::string& name) {
  for (const TestServer& s : server_versions().servers)
    if (s.name == name) return s;
  return std::nullopt;
}

RedisTls RedisTls::in(const TestPki& pki) {
  return RedisTls{
      pki.crt("ca"), pki.crt("redis"), pki.key("redis"), pki.crt("client"), pki.key("client"), true,
      true};
}

RedisTls make_redis_tls(TestPki& pki) {
  pki.make_ca("ca");
  pki.make_localhost_cert("redis", "ca");
  pki.make_client_cert("client", "ca");
  return RedisTls::in(pki);
}

std::vector<std::string> RedisTls::sidecar_args() const {
  return {"--redis-tls", "--redis-tls-cacert", ca,        "--redis-tls-cert",
          client_cert,   "--redis-tls-key",    client_key};
}

std::shared_ptr<const TlsContext> RedisTls::client_context() const {
  TlsOptions o;
  o.enabled = true;
  o.ca_file = ca;
  o.cert_file = client_cert;
  o.key_file = client_key;
  o.insecure = !test_verifies;
  o.flag = "the test's TLS";
  auto ctx = TlsContext::make(o, TlsRole::kClient, TlsWire::kRedis);
  if (!ctx.ok()) {
    ADD_FAILURE() << "TLS for the test's connections: " << ctx.status().message();
    return nullptr;
  }
  return std::make_shared<const TlsContext>(std::move(*ctx));
}

RedisProcess::RedisProcess(RedisOptions opts) : opts_(std::move(opts)), dir_("redis") {
  if (opts_.tls) {
    tls_ = opts_.tls->client_context();
    if (!tls_) {
      start_error_ = "no TLS context for the test's connections (see the failure above)";
      return;
    }
  }
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
  const std::string binary = opts_.binary.empty() ? RRS_REDIS_SERVER_BIN : opts_.binary;
  const std::string port = std::to_string(port_);
  std::vector<std::string> argv = {binary, "--port", opts_.tls ? "0" : port, "--bind", "127.0.0.1",
                                   "--dir", dir_.path(), "--save", "", "--appendonly", "no",
                                   "--enable-debug-command", "yes",
                                   // As a master serving the sidecar should be set: fork for a
                                   // full sync at once, not 5 s later waiting for more replicas.
                                   "--repl-diskless-sync-delay", "0", "--daemonize", "no",
                                   "--logfile", ""};
  if (!opts_.password.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(opts_.password);
  }
  if (const auto& tls = opts_.tls) {
    const std::vector<std::string> tls_args = {
        "--tls-port",         port,
        "--tls-cert-file",    tls->cert,
        "--tls-key-file",     tls->key,
        "--tls-ca-cert-file", tls->ca,
        "--tls-auth-clients", tls->auth_clients ? "yes" : "no",
        "--tls-replication",  "yes",
        "--tls-cluster",      "yes"};
    argv.insert(argv.end(), tls_args.begin(), tls_args.end());
  }
  argv.insert(argv.end(), opts_.extra_args.begin(), opts_.extra_args.end());
  server_.emplace(std::move(argv));

  auto deadline = std::chrono::steady_clock::now() + opts_.start_timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!server_->running()) {
      server_->wait(std::chrono::seconds(1));
      error = binary + " exited early:\n" + server_->describe();
      server_.reset();
      return false;
    }
    auto c = RedisClient::connect(port_, opts_.password, std::chrono::seconds(2), tls_);
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
