#include "tests/support/sidecar.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <sstream>

#include "common/transport/verbs/device.h"
#include "tests/support/ports.h"

namespace rrs::test {
namespace {

constexpr const char* kServerBin =
#ifdef RRS_SERVER_BIN
    RRS_SERVER_BIN;
#else
    "";
#endif
constexpr const char* kClientBin =
#ifdef RRS_CLIENT_BIN
    RRS_CLIENT_BIN;
#else
    "";
#endif

bool names_transport(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--transport") != args.end();
}

std::vector<std::string> server_argv(uint16_t port, const std::string& redis,
                                     std::vector<std::string> extra, FirstSnapshot first) {
  std::vector<std::string> argv = {kServerBin, "--listen", sidecar_host(), "--port",
                                   std::to_string(port)};
  if (!redis.empty()) argv.insert(argv.begin() + 1, {"--redis", redis});
  if (!names_transport(extra)) {
    argv.push_back("--transport");
    argv.push_back(test_transport());
  }
  if (first == FirstSnapshot::kAtStart) argv.push_back("--snapshot-at-start");
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace

std::string test_transport() {
  const char* t = std::getenv("RRS_TEST_TRANSPORT");
  return t && std::string(t) == "verbs" ? "verbs" : "tcp";
}

std::string sidecar_host() {
  const char* a = std::getenv("RRS_VERBS_ADDR");
  return test_transport() == "verbs" && a ? a : "127.0.0.1";
}

std::string server_binary() { return kServerBin; }
std::string client_binary() { return kClientBin; }

Fields parse_fields(const std::string& line) {
  Fields f;
  std::istringstream in(line);
  for (std::string tok; in >> tok;) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos && eq > 0) f[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return f;
}

std::optional<uint64_t> field_u64(const Fields& f, const std::string& key) {
  auto it = f.find(key);
  if (it == f.end()) return std::nullopt;
  uint64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<Fields> incomplete_line(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("incomplete ", 0) == 0) return parse_fields(line);
  return std::nullopt;
}

SidecarServer::SidecarServer(const std::string& redis, std::vector<std::string> extra,
                             const Process::Env& env, FirstSnapshot first)
    : port_(free_loopback_port()), proc_(server_argv(port_, redis, std::move(extra), first), env) {}

bool SidecarServer::wait_ready(std::chrono::milliseconds timeout) {
  auto line = proc_.wait_for_line("ready", timeout);
  if (!line) return false;
  ready_line_ = *line;
  ready_fields_ = parse_fields(ready_line_);
  auto it = ready_fields_.find("listening");
  if (it != ready_fields_.end()) {
    size_t colon = it->second.rfind(':');
    if (colon != std::string::npos) {
      Fields one = {{"p", it->second.substr(colon + 1)}};
      if (auto p = field_u64(one, "p"); p && *p > 0 && *p < 65536)
        port_ = static_cast<uint16_t>(*p);
    }
  }
  return true;
}

std::string ClientRun::describe() const {
  return "$ " + command + " (exit " + std::to_string(exit_code) + ", " +
         std::to_string(elapsed.count()) + " ms)\n--- stdout ---\n" + out + "\n--- stderr ---\n" +
         (err.size() > 8192 ? "[...]" + err.substr(err.size() - 8192) : err);
}

ClientRun run_client(std::vector<std::string> args, const Process::Env& env,
                     std::chrono::milliseconds timeout) {
  args.insert(args.begin(), kClientBin);
  auto start = std::chrono::steady_clock::now();
  Process p(std::move(args), env);
  ClientRun r;
  r.exit_code = p.wait(timeout);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  r.out = p.stdout_text();
  r.err = p.stderr_text();
  r.command = p.command_line();
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("synced", 0) == 0) {
      r.summary = parse_fields(line);
      r.has_summary = true;
    }
  }
  return r;
}

ClientRun sync_to(uint16_t server_port, const RedisProcess& target, std::vector<std::string> extra,
                  const Process::Env& env, std::chrono::milliseconds timeout) {
  std::vector<std::string> args = {sidecar_host(), std::to_string(server_port), "--redis",
                                   target.address()};
  if (!names_transport(extra)) {
    args.push_back("--transport");
    args.push_back(test_transport());
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return run_client(std::move(args), env, timeout);
}

void SidecarTest::SetUp() {
  if (server_binary().empty() || client_binary().empty())
    GTEST_SKIP() << "CMake defines no rdma-server/rdma-client target yet";
  if (test_transport() != "verbs") return;
  if (auto device = rdma_device_active(); !device.ok()) {
    const std::string why = device.status().reason();
    if (std::getenv("RRS_REQUIRE_VERBS")) FAIL() << "RRS_REQUIRE_VERBS is set but " << why;
    GTEST_SKIP() << "RRS_TEST_TRANSPORT=verbs but " << why
                 << " (the Soft-RoCE suite runs these: bash tests/vm/run-in-vm.sh)";
  }
}

void MasterTest::SetUp() {
  SidecarTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  ASSERT_TRUE(master_.started()) << master_.start_error();
}

}  // namespace rrs::test
