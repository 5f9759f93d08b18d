// Processes killed under the sidecar and the client, with real processes
// and nothing mocked: the master SIGKILLed mid-snapshot, the target SIGKILLed
// mid-load. Every wait is bounded. Runs over whichever transport the run
// uses (RRS_TEST_TRANSPORT). The network cut is in net_cut_test.cc.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/process.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
constexpr auto kStderr = Process::Stream::kStderr;

class KillTest : public MasterTest {};

// psync: the master dies mid-RDB. The sidecar must not publish what it had
// parsed; it retries (1 s, then doubling), and a master that is back on its
// port with its data (restarted from its RDB, as a crashed master is) gets
// a complete table.
TEST_F(KillTest, PsyncMasterKilledMidRdbThenBackWithItsData) {
  constexpr uint64_t kMasterKeys = 30000;
  master_.run({"DEBUG", "POPULATE", std::to_string(kMasterKeys), "k", "100"});
  master_.run({"SAVE"});  // what a restart loads
  TempDir saved("nf-rdb");
  std::filesystem::copy_file(master_.dir().file("dump.rdb"), saved.file("dump.rdb"));
  const std::string want = digest_of(master_);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "100"});  // ~3 s of RDB

  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.process().wait_for_line("began a full resync", 30s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(500ms);
  master_.kill();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(server.process().wait_for_line("retrying", 15s, kStderr)) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();

  // Back within the sidecar's first pause (1 s; a restart takes 50-250 ms
  // here), holding what it held.
  RedisOptions again_opts;
  again_opts.port = master_.port();
  again_opts.extra_args = {"--dir", saved.path(), "--dbfilename", "dump.rdb"};
  RedisProcess again(again_opts);
  ASSERT_TRUE(again.started()) << again.start_error();
  ASSERT_EQ(digest_of(again), want);

  ASSERT_TRUE(server.wait_ready(60s)) << server.describe();
  EXPECT_EQ(field_u64(server.ready_fields(), "records"), kMasterKeys) << server.ready_line();
  EXPECT_EQ(server.process().stdout_text().find("ready"),
            server.process().stdout_text().rfind("ready"))
      << "one ready line\n"
      << server.describe();
  RedisProcess fresh;
  ASSERT_TRUE(fresh.started()) << fresh.start_error();
  ClientRun run = sync_to(server.port(), fresh);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(digest_of(fresh), want);
}

// psync: the master dies mid-RDB and does not come back. No table, ever:
// the sidecar keeps retrying with backoff (1 s doubling to 30 s), as for a
// master that is restarting, and says so.
TEST_F(KillTest, PsyncMasterKilledMidRdbAndGoneNeverPublishes) {
  master_.run({"DEBUG", "POPULATE", "30000", "k", "100"});
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "100"});
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.process().wait_for_line("began a full resync", 30s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(500ms);
  master_.kill();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(server.process().wait_for_line("retrying", 15s, kStderr)) << server.describe();
  // It keeps retrying with backoff (the master may be restarting), naming
  // the master, and never publishes.
  ASSERT_TRUE(server.process().wait_for_line("snapshot attempt 2", 15s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(server.process().running()) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(master_.address()), std::string::npos)
      << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();
}

// scan: the master dies mid-SCAN. A walk cannot resume, so the sidecar
// stops, naming the master, and publishes nothing.
TEST_F(KillTest, ScanMasterKilledMidScanNeverPublishes) {
  master_.run({"DEBUG", "POPULATE", "200000", "k", "10"});
  // SCAN COUNT 10: 20000 round trips, time enough to catch the walk.
  SidecarServer server(master_.address(), {"--source", "scan", "--scan-count", "10"});
  bool walking = eventually(
      [&] {
        Reply r = master_.command({"CLIENT", "LIST"});
        std::string list = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
        return list.find("cmd=scan") != std::string::npos ||
               list.find("cmd=dump") != std::string::npos;
      },
      30s);
  ASSERT_TRUE(walking) << server.describe();
  master_.kill();
  ASSERT_FALSE(HasFailure());
  const int code = server.process().wait(60s);
  // A master gone mid-walk is "unavailable": exit 3, naming it, no table.
  EXPECT_EQ(code, exit_code::kUnavailable) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(master_.address()), std::string::npos)
      << server.describe();
}

// The target dies mid-load: the client stops at once with exit 3 naming the
// target, and the sidecar, untouched, serves the next client.
class TargetKillTest : public KillTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TargetKillTest, TargetKilledMidLoad) {
  const std::string mode = GetParam();
  const bool replica = mode == "replica";
  fill_strings(master_, 0, "k:", 25000, 1000);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  RedisOptions target_opts;
  if (replica) target_opts.extra_args = {"--repl-diskless-load", "swapdb"};
  RedisProcess target(target_opts);
  ASSERT_TRUE(target.started()) << target.start_error();
  std::vector<std::string> args = {client_binary(),
                                   sidecar_host(),
                                   std::to_string(server.port()),
                                   "--redis",
                                   target.address(),
                                   "--transport",
                                   test_transport(),
                                   "--mode",
                                   mode,
                                   "--io-timeout",
                                   "10",
                                   "--chunk-size",
                                   "64k",
                                   "--in-flight",
                                   "2"};
  if (replica) {
    // 200 us per key: the target takes 5 s to load the RDB from the stream.
    target.run({"CONFIG", "SET", "key-load-delay", "200"});
    Process client(args);
    ASSERT_TRUE(client.wait_for_line("the target connected", 30s, kStderr)) << client.describe();
    EXPECT_TRUE(eventually(
        [&] {
          return target.fresh_info_field("persistence", "loading") == "1" ||
                 target.fresh_info_field("persistence", "async_loading") == "1";
        },
        10s))
        << "the target never started loading\n"
        << client.describe();
    std::this_thread::sleep_for(300ms);
    target.kill();
    ASSERT_FALSE(HasFailure());
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
    EXPECT_LT(SteadyClock::now() - t0, 10s) << client.describe();
    EXPECT_NE(client.stderr_text().find("target"), std::string::npos) << client.describe();
    EXPECT_EQ(client.stdout_text().find("synced"), std::string::npos) << client.describe();
  } else {
    // Paused for writes: the client has RESTOREs in flight and most of the
    // table still to load when the target dies.
    target.run({"CLIENT", "PAUSE", "60000", "WRITE"});
    Process client(args);
    ASSERT_TRUE(client.wait_for_line("table epoch", 30s, kStderr)) << client.describe();
    std::this_thread::sleep_for(500ms);
    target.kill();
    ASSERT_FALSE(HasFailure());
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
    EXPECT_LT(SteadyClock::now() - t0, 10s) << client.describe();
    EXPECT_NE(client.stderr_text().find("target Redis " + target.address()), std::string::npos)
        << client.describe();
    EXPECT_TRUE(incomplete_line(client.stdout_text())) << client.describe();
  }

  EXPECT_TRUE(server.process().running()) << server.describe();
  RedisProcess fresh;
  ASSERT_TRUE(fresh.started()) << fresh.start_error();
  ClientRun run = sync_to(server.port(), fresh, {"--mode", mode});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(digest_of(fresh), digest_of(master_));
}

INSTANTIATE_TEST_SUITE_P(Modes, TargetKillTest, ::testing::Values("restore", "replica"),
                         [](const auto& p) {
                           return p.param == "replica" ? "Replica" : "Restore";
                         });

}  // namespace
}  // namespace rrs::test
