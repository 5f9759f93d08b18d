// What rdma-server and rdma-client write to stderr (docs/operations.md, "Logs"): one line
// per record with a UTC timestamp, the program and a level, or one JSON
// object per line with --log-format json; and a flood of hostile handshakes
// costs a few lines, not one per connection.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/auth/auth.h"
#include "proto/control.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/raw_peer.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using std::chrono::seconds;

constexpr int kHostileConnections = 2000;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Empty if every line of `text` is a JSON object with the four fields and
// `program`; else python's complaint.
std::string json_lines_problem(const std::string& text, const std::string& program) {
  TempDir dir("log-json");
  const std::string file = dir.write_file("stderr", text);
  CommandResult r = run_command({"python3", "-c",
                                 "import json, sys\n"
                                 "for line in open(sys.argv[1], encoding='utf-8'):\n"
                                 "    o = json.loads(line)\n"
                                 "    assert sorted(o) == ['level', 'msg', 'program', 'ts'], line\n"
                                 "    assert o['program'] == sys.argv[2], line\n"
                                 "    assert o['level'] in ('info', 'warn', 'error'), line\n"
                                 "    assert len(o['ts']) == 24 and o['ts'].endswith('Z'), line\n",
                                 file, program});
  return r.code == 0 ? "" : r.error;
}

// A peer without the secret: HELLO, then AUTH with a made-up proof (or no
// AUTH at all, straight to GET_DESCRIPTOR); the server refuses and hangs up.
void bad_handshake(uint16_t port, int i) {
  auto peer = RawPeer::connect(port);
  ASSERT_TRUE(peer.ok()) << peer.status().message();
  control::Hello hello;
  hello.client_nonce = *auth::random_nonce();
  std::string frames;
  control::append_hello(frames, 1, hello);
  if (i % 2 == 0)
    control::append_auth(frames, 2, control::MsgType::kAuth, control::Proof{});
  else
    control::append_get_descriptor(frames, 2);
  peer->send(frames);
  ASSERT_TRUE(peer->wait_closed(seconds(10))) << "connection " << i << " left open";
}

class LogTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
    fill_strings(master_, 0, "k:", 100);
  }

  RedisProcess replica_;
};

TEST_F(LogTest, TextLinesHaveTimestampProgramAndLevel) {
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  server.process().terminate();
  const std::regex line(
      R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (rdma-server|rdma-client) (INFO|WARN|ERROR) .+)");
  for (const auto& [text, program] : {std::pair{server.process().stderr_text(), "rdma-server"},
                                      std::pair{run.err, "rdma-client"}}) {
    const auto lines = lines_of(text);
    EXPECT_FALSE(lines.empty()) << program;
    for (const auto& l : lines) {
      std::smatch m;
      ASSERT_TRUE(std::regex_match(l, m, line)) << l;
      EXPECT_EQ(m[1], program) << l;
    }
  }
}

TEST_F(LogTest, JsonLinesParse) {
  SidecarServer server(master_.address(), {"--log-format", "json"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--log-format", "json"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("synced"), std::string::npos) << "stdout keeps its own lines";
  server.process().terminate();
  EXPECT_EQ(json_lines_problem(server.process().stderr_text(), "rdma-server"), "")
      << server.describe();
  EXPECT_EQ(json_lines_problem(run.err, "rdma-client"), "") << run.describe();
  EXPECT_NE(server.process().stderr_text().find(R"("msg":"received SIGTERM, stopping")"),
            std::string::npos)
      << server.describe();
}

// 2000 connections without the secret: the first few refusals are logged,
// then one line counts the rest when the 10 s interval ends. The server
// still serves a client with the secret afterwards.
TEST_F(LogTest, HostileHandshakesAreRateLimited) {
  SidecarServer server(master_.address(), {"--transport", "tcp", "--log-format", "json"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const size_t lines_before = lines_of(server.process().stderr_text()).size();

  // Four peers at a time, within the server's per-address handshake budget.
  std::vector<std::thread> flooders;
  flooders.reserve(4);
  for (int t = 0; t < 4; ++t)
    flooders.emplace_back([&, t] {
      for (int i = t; i < kHostileConnections; i += 4) bad_handshake(server.port(), i);
    });
  for (auto& f : flooders) f.join();

  // Every refusal is either written or counted in a summary.
  const std::regex summary(R"(and (\d+) more like it in the last 10 s \(client refused\))");
  size_t written = 0, counted = 0;
  auto tally = [&] {
    written = counted = 0;
    for (const auto& l : lines_of(server.process().stderr_text())) {
      if (l.find("; disconnecting it") != std::string::npos) ++written;
      std::smatch m;
      if (std::regex_search(l, m, summary)) counted += std::stoul(m[1]);
    }
    return written + counted == kHostileConnections;
  };
  EXPECT_TRUE(eventually(tally, seconds(25)))
      << written << " refusals written, " << counted << " counted\n"
      << server.describe();
  EXPECT_LE(written, 40u);
  const size_t lines_after = lines_of(server.process().stderr_text()).size();
  EXPECT_LE(lines_after - lines_before, 50u) << server.describe();

  ClientRun run = sync_to(server.port(), replica_, {"--transport", "tcp"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  server.process().terminate();
  EXPECT_EQ(json_lines_problem(server.process().stderr_text(), "rdma-server"), "")
      << server.describe();
}

}  // namespace
}  // namespace rrs::test
