// A child process for tests: spawned from an argv, with stdout and stderr
// captured by a thread that drains both pipes (so a chatty child never blocks
// on a full pipe) and reaps the child as soon as it exits.
//
// Thread use: every public method may be called from the test's thread; the
// drain thread only appends output and records the exit status.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/auth/auth.h"

namespace rrs::test {

using namespace std::chrono_literals;

inline constexpr const char* kSidecarSecretEnv = auth::kSecretEnv;
inline constexpr const char* kTestSidecarSecret = "rrs-test-suite-shared-secret-4f1c";

class Process {
 public:
  // Variables set on top of the inherited environment; an empty value unsets
  // one. The inherited RDMA_SERVER_REDIS_AUTH / RDMA_CLIENT_REDIS_AUTH /
  // RDMA_SIDECAR_SECRET are always dropped, so a password exported in the
  // developer's shell never leaks into a test; RDMA_SIDECAR_SECRET is then
  // set to kTestSidecarSecret unless `env` names it.
  using Env = std::vector<std::pair<std::string, std::string>>;

  // wait() result when the child had to be killed; exit codes are 0..255 and
  // death by signal N is 128+N, as in a shell.
  static constexpr int kTimedOut = -1;
  // What a child that could not be spawned "exits" with (like a shell's 127).
  static constexpr int kSpawnFailed = 127;

  // Spawns argv[0] (searched in PATH if it has no '/') with stdin on /dev/null.
  explicit Process(std::vector<std::string> argv, const Env& env = {});
  // Stops a child that is still running (SIGTERM, then SIGKILL after 5 s).
  ~Process();
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const;
  // True until the child has exited (or if spawning failed: false).
  bool running() const;

  // Waits until a whole stdout (or stderr) line contains `needle` and returns
  // that line (without '\n'); nullopt if the child exits or `timeout` passes first.
  enum class Stream { kStdout, kStderr };
  std::optional<std::string> wait_for_line(std::string_view needle,
                                           std::chrono::milliseconds timeout,
                                           Stream stream = Stream::kStdout);

  // Waits for exit and returns the exit code. On timeout, records a gtest
  // failure naming the command, kills the child, and returns kTimedOut.
  int wait(std::chrono::milliseconds timeout);

  // SIGTERM, then SIGKILL if still alive after `grace`; returns the exit code
  // (128+9 if it had to be killed).
  int terminate(std::chrono::milliseconds grace = 5s);

  // Sends `sig` if the child has not been reaped yet.
  void signal(int sig);

  std::string stdout_text() const;
  std::string stderr_text() const;
  std::string command_line() const;
  // Command line, state, and the tails of stdout and stderr: for failure messages.
  std::string describe() const;

 private:
  struct State;
  void stop(std::chrono::milliseconds grace) noexcept;

  std::unique_ptr<State> state_;
  std::thread drain_;  // joined in stop(); reads from *state_, never from *this
};

// What run_command() saw.
struct CommandResult {
  int code = -1;
  std::string out, error;  // error: the command and its stderr, when code != 0
};

// Runs a short command (10 s at most; then it is killed and fails).
CommandResult run_command(std::vector<std::string> argv);

}  // namespace rrs::test
