#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>

namespace rrs::test {
namespace {

constexpr const char* kScrubbedEnv[] = {"RDMA_SERVER_REDIS_AUTH", "RDMA_CLIENT_REDIS_AUTH",
                                        "RDMA_SIDECAR_SECRET"};
constexpr size_t kTailBytes = 4096;

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

std::string tail(const std::string& s) {
  if (s.size() <= kTailBytes) return s;
  return "[...]" + s.substr(s.size() - kTailBytes);
}

// A pidfd becomes readable when the child exits, which lets the drain thread
// notice the exit while a pipe is still open (a grandchild could hold it).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

std::vector<std::string> build_env(const Process::Env& extra) {
  std::set<std::string> drop(std::begin(kScrubbedEnv), std::end(kScrubbedEnv));
  for (const auto& [name, value] : extra) drop.insert(name);
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    std::string name(kv.substr(0, kv.find('=')));
    if (!drop.contains(name)) env.emplace_back(kv);
  }
  // Every sidecar and client of the suite shares one secret unless a test
  // says otherwise, so authentication runs in every test, on both transports.
  const bool secret_named = std::any_of(extra.begin(), extra.end(), [](const auto& kv) {
    return kv.first == kSidecarSecretEnv;
  });
  if (!secret_named) env.push_back(std::string(kSidecarSecretEnv) + "=" + kTestSidecarSecret);
  for (const auto& [name, value] : extra)
    if (!value.empty()) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

struct Process::State {
  std::vector<std::string> argv;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1, pidfd = -1;  // owned by the drain thread once it runs

  mutable std::mutex mu;
  std::condition_variable cv;
  std::string out, err;  // guarded by mu
  bool reaped = false;   // guarded by mu; the pid may be reused once true
  int exit_code = 0;     // guarded by mu; valid once reaped

  enum class Read { kData, kEmpty, kClosed };

  // One read(2) from `fd` into `sink`; closes `fd` at EOF or on an error.
  Read read_once(int& fd, std::string& sink) {
    std::array<char, 65536> buf;
    for (;;) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n > 0) {
        std::lock_guard lock(mu);
        sink.append(buf.data(), static_cast<size_t>(n));
        cv.notify_all();
        return Read::kData;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return Read::kEmpty;
      ::close(fd);
      fd = -1;
      return Read::kClosed;
    }
  }

  void drain_until_exit() {
    while (pidfd >= 0 || out_fd >= 0 || err_fd >= 0) {
      std::array<pollfd, 3> fds{};
      nfds_t n = 0;
      for (int fd : {out_fd, err_fd, pidfd})
        if (fd >= 0) fds[n++] = pollfd{fd, POLLIN, 0};
      if (::poll(fds.data(), n, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      bool exited = false;
      for (nfds_t i = 0; i < n; ++i) {
        if (!fds[i].revents) continue;
        if (fds[i].fd == pidfd)
          exited = true;
        else if (fds[i].fd == out_fd)
          read_once(out_fd, out);
        else
          read_once(err_fd, err);
      }
      if (exited) break;
    }
    // The child is gone: what it wrote is already in the pipes. Drain without
    // blocking, since a grandchild may still hold the write ends open.
    for (auto [fd, sink] : {std::pair{&out_fd, &out}, std::pair{&err_fd, &err}}) {
      if (*fd < 0) continue;
      ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) | O_NONBLOCK);
      while (read_once(*fd, *sink) == Read::kData) {
      }
    }
  }

  // The drain thread's body: capture output until the child exits, then reap.
  void run() {
    drain_until_exit();
    // Wait without reaping, then reap under the lock, so signal() never sends
    // to a pid that was already recycled.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 &&
           errno == EINTR) {
    }
    int status = 0;
    std::lock_guard lock(mu);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    exit_code = exit_code_of(status);
    reaped = true;
    for (int* fd : {&out_fd, &err_fd, &pidfd}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
    cv.notify_all();
  }
};

Process::Process(std::vector<std::string> argv, const Env& env)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.argv = std::move(argv);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    s.err = "pipe2: " + std::string(std::strerror(errno));
    s.exit_code = kSpawnFailed;
    s.reaped = true;
    return;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  // gtest or the harness may block or ignore signals; the child starts clean.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = s.argv;
  std::vector<std::string> envs = build_env(env);
  std::vector<char*> c_args = c_strings(args), c_env = c_strings(envs);
  int rc = args.empty() ? EINVAL
                        : ::posix_spawnp(&s.pid, args[0].c_str(), &actions, &attr, c_args.data(),
                                         c_env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    s.err = "spawn " + command_line() + ": " + std::strerror(rc);
    s.exit_code = kSpawnFailed;
    s.reaped = true;
    return;
  }
  s.out_fd = out_pipe[0];
  s.err_fd = err_pipe[0];
  s.pidfd = open_pidfd(s.pid);
  drain_ = std::thread([state = state_.get()] { state->run(); });
}

Process::~Process() { stop(5s); }

Process::Process(Process&& other) noexcept
    : state_(std::move(other.state_)), drain_(std::move(other.drain_)) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    stop(5s);
    state_ = std::move(other.state_);
    drain_ = std::move(other.drain_);
  }
  return *this;
}

void Process::stop(std::chrono::milliseconds grace) noexcept {
  if (!state_) return;
  if (running()) (void)terminate(grace);
  if (drain_.joinable()) drain_.join();
}

pid_t Process::pid() const { return state_ ? state_->pid : -1; }

bool Process::running() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mu);
  return !state_->reaped;
}

std::optional<std::string> Process::wait_for_line(std::string_view needle,
                                                  std::chrono::milliseconds timeout,
                                                  Stream stream) {
  std::unique_lock lock(state_->mu);
  std::optional<std::string> found;
  auto search = [&] {
    const std::string& out = stream == Stream::kStdout ? state_->out : state_->err;
    size_t start = 0;
    for (;;) {
      size_t end = out.find('\n', start);
      // The last line counts without its '\n' only once nothing more can come.
      if (end == std::string::npos && !state_->reaped) return false;
      std::string_view line(out.data() + start,
                            (end == std::string::npos ? out.size() : end) - start);
      if (line.find(needle) != std::string_view::npos) {
        found = std::string(line);
        return true;
      }
      if (end == std::string::npos) return true;  // exited without it
      start = end + 1;
    }
  };
  state_->cv.wait_for(lock, timeout, search);
  return found;
}

int Process::wait(std::chrono::milliseconds timeout) {
  {
    std::unique_lock lock(state_->mu);
    if (state_->cv.wait_for(lock, timeout, [&] { return state_->reaped; }))
      return state_->exit_code;
  }
  ADD_FAILURE() << command_line() << " did not exit within " << timeout.count()
                << " ms; killing it.\n"
                << describe();
  signal(SIGKILL);
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->reaped; });
  return kTimedOut;
}

int Process::terminate(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  std::unique_lock lock(state_->mu);
  if (!state_->cv.wait_for(lock, grace, [&] { return state_->reaped; })) {
    lock.unlock();
    signal(SIGKILL);
    lock.lock();
    state_->cv.wait(lock, [&] { return state_->reaped; });
  }
  return state_->exit_code;
}

void Process::signal(int sig) {
  std::lock_guard lock(state_->mu);
  if (!state_->reaped && state_->pid > 0) ::kill(state_->pid, sig);
}

std::string Process::stdout_text() const {
  std::lock_guard lock(state_->mu);
  return state_->out;
}

std::string Process::stderr_text() const {
  std::lock_guard lock(state_->mu);
  return state_->err;
}

std::string Process::command_line() const {
  std::string s;
  for (const auto& a : state_->argv) {
    if (!s.empty()) s += ' ';
    s += a.find_first_of(" \t'\"") == std::string::npos && !a.empty() ? a : "'" + a + "'";
  }
  return s;
}

std::string Process::describe() const {
  std::lock_guard lock(state_->mu);
  std::string s = "$ " + command_line() + " ";
  s += state_->reaped ? "(exit " + std::to_string(state_->exit_code) + ")"
                      : "(running, pid " + std::to_string(state_->pid) + ")";
  s += "\n--- stdout ---\n" + tail(state_->out) + "\n--- stderr ---\n" + tail(state_->err);
  return s;
}

CommandResult run_command(std::vector<std::string> argv) {
  Process p(std::move(argv));
  CommandResult r;
  r.code = p.wait(std::chrono::seconds(10));
  r.out = p.stdout_text();
  if (r.code != 0)
    r.error = "$ " + p.command_line() + " (exit " + std::to_string(r.code) +
              "): " + p.stderr_text();
  return r;
}

}  // namespace rrs::test
