// Streamed epochs (docs/mapping-table.md): a snapshot taken while rdma-server
// serves is published over TCP as soon as it is laid out, and clients load
// its records while the master's fork child is still writing the RDB. The
// master's rdb-key-save-delay slows the fork child so that clients are
// always ahead of the build and must wait at its watermark.
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <string>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

class StreamedTest : public MasterTest {
 protected:
  // rdma-server beside master_: the first snapshot on demand, at once. Over
  // verbs its registration grows 64 KiB at a time, many times per table.
  SidecarServer on_demand() {
    return SidecarServer(master_.address(), kOnDemandFlags, kGrowEnv, FirstSnapshot::kOnDemand);
  }

  // Kills `server` and starts another on its port, which takes a snapshot
  // of its own (a new epoch) for the clients that reconnect.
  void restart(std::optional<SidecarServer>& server) {
    const std::string port = std::to_string(server->port());
    server->process().signal(SIGKILL);
    server.reset();
    std::vector<std::string> flags = kOnDemandFlags;
    flags.insert(flags.end(), {"--port", port});
    server.emplace(master_.address(), flags, kGrowEnv, FirstSnapshot::kOnDemand);
    ASSERT_TRUE(server->wait_ready()) << server->describe();
  }

  // A client of `server` loading `target` in the background.
  Process start_client(const SidecarServer& server, const RedisProcess& target,
                       std::vector<std::string> extra) {
    std::vector<std::string> args = {
        client_binary(), sidecar_host(),   std::to_string(server.port()),
        "--redis",       target.address(), "--transport",
        test_transport()};
    args.insert(args.end(), extra.begin(), extra.end());
    return Process(args);
  }

  const std::vector<std::string> kOnDemandFlags = {"--source", "psync", "--snapshot-delay", "0"};
  const Process::Env kGrowEnv = {{"RRS_TEST_GROW_STEP_KB", "64"}};
};

// Two clients, restore and replica mode, arrive before the first snapshot:
// both get the table while it is built (their "table epoch" line comes
// before the sidecar's "published" line), share the one fork, and end equal
// to the master.
TEST_F(StreamedTest, ClientsLoadWhileTheTableIsBuiltInBothModes) {
  fill_strings(master_, 0, "k:", 6000, 200);
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "500"});  // ~3 s of RDB
  SidecarServer server = on_demand();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess a, b;
  ASSERT_TRUE(a.started()) << a.start_error();
  ASSERT_TRUE(b.started()) << b.start_error();
  Process restore = start_client(server, a, {"--mode", "restore"});
  Process replica = start_client(server, b, {"--mode", "replica"});
  for (Process* c : {&restore, &replica}) {
    ASSERT_TRUE(c->wait_for_line("table epoch", 60s, Process::Stream::kStderr)) << c->describe();
    EXPECT_EQ(server.process().stdout_text().find("published "), std::string::npos)
        << "the table was complete before the client read it\n"
        << server.describe();
  }
  EXPECT_EQ(restore.wait(120s), 0) << restore.describe();
  EXPECT_EQ(replica.wait(120s), 0) << replica.describe();
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  EXPECT_NE(server.process().stderr_text().find("served while it is built"), std::string::npos)
      << server.describe();
  EXPECT_EQ(a.digest(), master_.digest()) << restore.describe();
  EXPECT_EQ(b.digest(), master_.digest()) << replica.describe();
  EXPECT_EQ(master_.info_field("stats", "total_forks"), "1") << server.describe();
}

// The master killed while its RDB streams in: the table is marked broken,
// and the client reading it stops with the incomplete line and the reason
// (exit 3) instead of waiting for records that will never come.
TEST_F(StreamedTest, ABuildThatBreaksOffStopsItsClientWithTheReason) {
  fill_strings(master_, 0, "k:", 10000, 100);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});  // ~10 s of RDB
  SidecarServer server = on_demand();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  Process client = start_client(server, target, {"--mode", "restore"});
  ASSERT_TRUE(client.wait_for_line("table epoch", 60s, Process::Stream::kStderr))
      << client.describe();
  master_.kill();
  EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
  EXPECT_NE(client.stdout_text().find("incomplete"), std::string::npos) << client.describe();
  EXPECT_NE(client.stderr_text().find("broke off"), std::string::npos) << client.describe();
  EXPECT_NE(server.process().stderr_text().find("broke off while it was built"), std::string::npos)
      << server.describe();
}

// The sidecar killed and started again while its clients read a table still
// being built: the new one serves a new epoch, and each client starts over
// on it (restore mode flushes the part it loaded, replica mode detaches its
// target and streams it a whole RDB again) and ends equal, exit 0.
TEST_F(StreamedTest, ClientsStartOverWhenTheSidecarRestartsMidBuild) {
  fill_strings(master_, 0, "k:", 10000, 100);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});  // ~10 s of RDB
  std::optional<SidecarServer> server(on_demand());
  ASSERT_TRUE(server->wait_ready()) << server->describe();
  RedisProcess a, b;
  ASSERT_TRUE(a.started()) << a.start_error();
  ASSERT_TRUE(b.started()) << b.start_error();
  Process restore = start_client(*server, a, {"--mode", "restore"});
  Process replica = start_client(*server, b, {"--mode", "replica"});
  for (Process* c : {&restore, &replica})
    ASSERT_TRUE(c->wait_for_line("table epoch", 60s, Process::Stream::kStderr)) << c->describe();
  std::this_thread::sleep_for(1500ms);  // part of the table loaded
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  restart(server);
  EXPECT_EQ(restore.wait(120s), 0) << restore.describe() << server->describe();
  EXPECT_EQ(replica.wait(120s), 0) << replica.describe() << server->describe();
  for (Process* c : {&restore, &replica})
    EXPECT_NE(c->stderr_text().find("starting over on epoch"), std::string::npos) << c->describe();
  EXPECT_NE(restore.stderr_text().find("flushing the target"), std::string::npos)
      << restore.describe();
  EXPECT_EQ(a.digest(), master_.digest()) << restore.describe();
  EXPECT_EQ(b.digest(), master_.digest()) << replica.describe();
}

// With --merge the keys loaded from the old epoch cannot be told from the
// target's own: the client stops with the incomplete line (exit 3) instead.
TEST_F(StreamedTest, AMergeCannotStartOver) {
  fill_strings(master_, 0, "k:", 10000, 100);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});
  std::optional<SidecarServer> server(on_demand());
  ASSERT_TRUE(server->wait_ready()) << server->describe();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  target.run({"SET", "own", "key"});
  Process client = start_client(*server, target, {"--merge"});
  ASSERT_TRUE(client.wait_for_line("table epoch", 60s, Process::Stream::kStderr))
      << client.describe();
  std::this_thread::sleep_for(1500ms);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  restart(server);
  EXPECT_EQ(client.wait(120s), exit_code::kUnavailable) << client.describe();
  EXPECT_NE(client.stderr_text().find("cannot be taken out again"), std::string::npos)
      << client.describe();
  EXPECT_NE(client.stdout_text().find("incomplete"), std::string::npos) << client.describe();
  EXPECT_EQ(target.command({"GET", "own"})->str, std::string("key"));
}

}  // namespace
}  // namespace rrs::test
