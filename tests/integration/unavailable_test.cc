// Unreachable peers: nothing listening, a peer that never answers, a Redis
// that is down. Each must end in exit 3 (unavailable) promptly, naming what
// could not be reached.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/text.h"

namespace rrs::test {
namespace {

using std::chrono::seconds;

// A socket that listens but never accepts or answers: the kernel completes
// TCP handshakes into the backlog, so connect() succeeds and then silence.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      ADD_FAILURE() << "silent listener: " << std::strerror(errno);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

class UnavailableTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(redis_.started()) << redis_.start_error();
  }
  RedisProcess redis_;
};

TEST_F(UnavailableTest, ServerNotListening) {
  uint16_t port = closed_loopback_port();
  ClientRun run = run_client({"127.0.0.1", std::to_string(port), "--redis", redis_.address(),
                              "--connect-timeout", "2"},
                             {}, seconds(30));
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_LT(run.elapsed, seconds(6)) << run.describe();
  EXPECT_NE(lower(run.err).find("connect"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find(std::to_string(port)), std::string::npos)
      << "should name the address it tried\n"
      << run.describe();
  EXPECT_EQ(redis_.keyspace(), Keyspace{});
}

// Beyond a refused connect: a peer that accepts and then never answers HELLO
// must not hang the client either.
TEST_F(UnavailableTest, ServerNeverAnswers) {
  SilentListener silent;
  ClientRun run = run_client({"127.0.0.1", std::to_string(silent.port()), "--redis",
                              redis_.address(), "--connect-timeout", "2"},
                             {}, seconds(60));
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_LT(run.elapsed, seconds(10)) << "--connect-timeout 2 should bound the handshake too\n"
                                      << run.describe();
}

TEST_F(UnavailableTest, MasterRedisDown) {
  std::string address = "127.0.0.1:" + std::to_string(closed_loopback_port());
  SidecarServer server(address);
  int code = server.process().wait(seconds(30));
  EXPECT_EQ(code, exit_code::kUnavailable) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(address), std::string::npos) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();
}

// In both modes: an unreachable target is exit 3 (retry later), as the soak
// found replica mode once said 1.
TEST_F(UnavailableTest, TargetRedisDown) {
  fill_strings(redis_, 0, "k:", 10);
  SidecarServer server(redis_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  std::string address = "127.0.0.1:" + std::to_string(closed_loopback_port());
  for (const char* mode : {"restore", "replica"}) {
    ClientRun run = run_client({"127.0.0.1", std::to_string(server.port()), "--redis", address,
                                "--mode", mode},
                               {}, seconds(30));
    EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << mode << ": " << run.describe();
    EXPECT_NE(run.err.find(address), std::string::npos) << run.describe();
  }
  EXPECT_TRUE(server.process().running()) << server.describe();
}

}  // namespace
}  // namespace rrs::test
