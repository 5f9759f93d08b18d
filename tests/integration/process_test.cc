// Tests of tests/support/process: the harness every end-to-end test relies on
// to capture output, see exit codes, and never hang.
#include "tests/support/process.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cerrno>
#include <csignal>

namespace rrs::test {
namespace {

Process sh(const std::string& script, const Process::Env& env = {}) {
  return Process({"/bin/sh", "-c", script}, env);
}

TEST(ProcessTest, CapturesStdoutStderrAndExitCode) {
  Process p = sh("echo out; echo err >&2; exit 7");
  EXPECT_EQ(p.wait(10s), 7);
  EXPECT_EQ(p.stdout_text(), "out\n");
  EXPECT_EQ(p.stderr_text(), "err\n");
  EXPECT_FALSE(p.running());
}

TEST(ProcessTest, PassesExtraEnvironmentAndDropsAuthVariables) {
  ::setenv("RDMA_SERVER_REDIS_AUTH", "leaked", 1);
  Process p = sh("echo \"[$RRS_X][${RDMA_SERVER_REDIS_AUTH-unset}]\"", {{"RRS_X", "a b"}});
  ::unsetenv("RDMA_SERVER_REDIS_AUTH");
  EXPECT_EQ(p.wait(10s), 0);
  EXPECT_EQ(p.stdout_text(), "[a b][unset]\n");
}

TEST(ProcessTest, WaitForLineFindsAWholeLine) {
  Process p = sh("echo starting; sleep 0.2; echo 'ready port=1'; sleep 30");
  auto line = p.wait_for_line("ready", 10s);
  ASSERT_TRUE(line.has_value()) << p.describe();
  EXPECT_EQ(*line, "ready port=1");
  EXPECT_TRUE(p.running());
  EXPECT_EQ(p.terminate(), 128 + SIGTERM);
}

TEST(ProcessTest, WaitForLineGivesUpWhenTheChildExits) {
  Process p = sh("echo nope; exit 3");
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(p.wait_for_line("ready", 30s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(p.wait(1s), 3);
}

TEST(ProcessTest, WaitForLineTimesOut) {
  Process p = sh("sleep 30");
  EXPECT_FALSE(p.wait_for_line("ready", 200ms).has_value());
  EXPECT_TRUE(p.running());
}

TEST(ProcessTest, WaitTimeoutKillsAndFails) {
  Process p = sh("sleep 30");
  int code = 0;
  EXPECT_NONFATAL_FAILURE(code = p.wait(200ms), "did not exit within 200 ms");
  EXPECT_EQ(code, Process::kTimedOut);
  EXPECT_FALSE(p.running());
}

TEST(ProcessTest, TerminateEscalatesToSigkill) {
  Process p = sh("trap '' TERM; echo armed; while :; do sleep 1; done");
  ASSERT_TRUE(p.wait_for_line("armed", 10s)) << p.describe();
  EXPECT_EQ(p.terminate(300ms), 128 + SIGKILL);
}

TEST(ProcessTest, LargeOutputDoesNotBlockTheChild) {
  // Far more than a pipe buffer on both streams at once.
  Process p = sh("head -c 5000000 /dev/zero; head -c 3000000 /dev/zero >&2");
  EXPECT_EQ(p.wait(30s), 0);
  EXPECT_EQ(p.stdout_text().size(), 5000000u);
  EXPECT_EQ(p.stderr_text().size(), 3000000u);
}

TEST(ProcessTest, MissingBinaryReportsSpawnFailure) {
  Process p({"/nonexistent/rrs-binary"});
  EXPECT_EQ(p.wait(5s), Process::kSpawnFailed);
  EXPECT_NE(p.stderr_text().find("rrs-binary"), std::string::npos) << p.stderr_text();
}

TEST(ProcessTest, DestructorStopsARunningChild) {
  pid_t pid;
  {
    Process p = sh("sleep 30");
    pid = p.pid();
    ASSERT_GT(pid, 0);
  }
  // Killed and reaped: no child of ours by that pid is left, not even a zombie.
  errno = 0;
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace rrs::test
