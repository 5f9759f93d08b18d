// Running the shipped binaries the way a user does: rdma-server against a
// master, rdma-client into a target, with their output and exit codes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/redis_process.h"

namespace rrs::test {

// Paths from CMake ($<TARGET_FILE:...>); empty when the target is not defined.
std::string server_binary();
std::string client_binary();

// "key=value" tokens of a line such as the server's `ready ...` or the
// client's `synced ...`; other tokens are ignored.
using Fields = std::map<std::string, std::string>;
Fields parse_fields(const std::string& line);
// A field as a number; nullopt if absent or not a number.
std::optional<uint64_t> field_u64(const Fields& f, const std::string& key);
// The fields of the `incomplete ...` line a client prints when a sync stops
// midway, found in its whole stdout; nullopt if there is none.
std::optional<Fields> incomplete_line(const std::string& out);

// The transport the end-to-end tests run over: "tcp" unless
// RRS_TEST_TRANSPORT=verbs (the Soft-RoCE suite, tests/vm/, sets it together
// with RRS_VERBS_ADDR, the address of the rxe interface).
std::string test_transport();
// Where the sidecar listens and the client connects: 127.0.0.1 over TCP,
// $RRS_VERBS_ADDR over verbs.
std::string sidecar_host();

// When rdma-server (psync) takes its first snapshot: at start (what most
// tests want: the table is there once wait_ready() returns, and the ready
// line describes it), or when the first client asks (the default for users).
enum class FirstSnapshot { kAtStart, kOnDemand };

// rdma-server on sidecar_host() at a free port reading `redis` ("HOST:PORT";
// "": no --redis, for --source rdb), with --transport test_transport() unless
// `extra` names a transport, and --snapshot-at-start unless `first` is
// kOnDemand. `extra` goes last.
class SidecarServer {
 public:
  explicit SidecarServer(const std::string& redis, std::vector<std::string> extra = {},
                         const Process::Env& env = {},
                         FirstSnapshot first = FirstSnapshot::kAtStart);

  // Waits for the `ready` line. On failure returns false; describe() says why.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  const std::string& ready_line() const { return ready_line_; }
  const Fields& ready_fields() const { return ready_fields_; }
  // The port it listens on (from `listening=` once ready, else the one we chose).
  uint16_t port() const { return port_; }
  Process& process() { return proc_; }
  std::string describe() const { return proc_.describe(); }

 private:
  uint16_t port_;
  Process proc_;
  std::string ready_line_;
  Fields ready_fields_;
};

// One finished rdma-client run.
struct ClientRun {
  int exit_code = -1;
  std::string out, err;
  std::chrono::milliseconds elapsed{0};
  std::string command;
  Fields summary;  // from the stdout line starting with "synced"; empty if none
  bool has_summary = false;

  std::optional<uint64_t> count(const std::string& key) const { return field_u64(summary, key); }
  std::string describe() const;
};

// Runs rdma-client with exactly `args` and waits (killing it after `timeout`).
ClientRun run_client(std::vector<std::string> args, const Process::Env& env = {},
                     std::chrono::milliseconds timeout = std::chrono::seconds(90));

// rdma-client <sidecar_host()> <server_port> --redis <target>
//   [--transport test_transport() unless `extra` names one] <extra...>
ClientRun sync_to(uint16_t server_port, const RedisProcess& target,
                  std::vector<std::string> extra = {}, const Process::Env& env = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(90));

// Base fixture for tests of the shipped binaries: skips when CMake did not
// define the rdma-server / rdma-client targets, or when running over verbs
// without an RDMA device (outside the Soft-RoCE VM).
class SidecarTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

// A SidecarTest with a master Redis of its own (master_), started before
// each test. A fixture's own SetUp calls this one first and returns when
// IsSkipped() || HasFatalFailure().
class MasterTest : public SidecarTest {
 protected:
  void SetUp() override;
  RedisProcess master_;
};

}  // namespace rrs::test
