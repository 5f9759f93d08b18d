// Several replicas at once, and a sidecar that dies under a client: over
// whichever transport the run uses (RRS_TEST_TRANSPORT).
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

class FaultTest : public MasterTest {
 protected:
  // 25,000 keys of 1000 bytes, each with a TTL so that each is a command of
  // its own (SET ... PXAT), not one of an MSET's many: a table larger than
  // what the loader sends before it waits for replies.
  void fill_keys_with_ttls() {
    fill_strings(master_, 0, "k:", 25000, 1000);
    master_.run({"EVAL",
                 "for _, k in ipairs(redis.call('KEYS', 'k:*')) do "
                 "redis.call('PEXPIRE', k, 3600000) end",
                 "0"});
  }
};

TEST_F(FaultTest, FourClientsSyncAtOnce) {
  fill_strings(master_, 0, "k:", 2000, 1000);
  fill_strings(master_, 2, "big:", 3, 300000);  // heap records
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  std::vector<std::unique_ptr<RedisProcess>> replicas;
  for (int i = 0; i < 4; ++i) {
    replicas.push_back(std::make_unique<RedisProcess>());
    ASSERT_TRUE(replicas.back()->started()) << replicas.back()->start_error();
  }
  std::vector<ClientRun> runs(replicas.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < replicas.size(); ++i)
    threads.emplace_back([&, i] { runs[i] = sync_to(server.port(), *replicas[i]); });
  for (auto& t : threads) t.join();
  const std::string want = master_.digest();
  for (size_t i = 0; i < replicas.size(); ++i) {
    EXPECT_EQ(runs[i].exit_code, 0) << runs[i].describe() << server.describe();
    EXPECT_EQ(replicas[i]->digest(), want) << "replica " << i;
  }
}

// The client must report a dead sidecar, within its timeouts, never hang.
// CLIENT PAUSE WRITE on the target holds the loader, so the fetcher stops
// reading with most of the table still unread when the sidecar is killed
// (the table is larger than what the loader sends before it waits for replies:
// 16384 unanswered commands; Redis still reads a paused client's input).
TEST_F(FaultTest, ServerKilledMidTransferIsReportedNotHung) {
  fill_keys_with_ttls();
  RedisProcess replica;
  ASSERT_TRUE(replica.started()) << replica.start_error();
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  replica.run({"CLIENT", "PAUSE", "20000", "WRITE"});
  std::vector<std::string> args = {sidecar_host(),      std::to_string(server.port()),
                                   "--redis",           replica.address(),
                                   "--transport",       test_transport(),
                                   "--chunk-size",      "64k",
                                   "--in-flight",       "2",
                                   "--connect-timeout", "3",
                                   "--retries",         "1"};
  args.insert(args.begin(), client_binary());
  Process client(args);
  ASSERT_TRUE(
      client.wait_for_line("table epoch", std::chrono::seconds(30), Process::Stream::kStderr))
      << client.describe();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // read-ahead fills up
  server.process().signal(SIGKILL);
  replica.run({"CLIENT", "UNPAUSE"});

  auto t0 = std::chrono::steady_clock::now();
  int code = client.wait(std::chrono::seconds(60));
  EXPECT_EQ(code, 3) << client.describe();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << client.describe();
  EXPECT_NE(client.stderr_text().find("reconnect"), std::string::npos) << client.describe();
}

// The same kill, and a sidecar started again on its port: it serves a new
// epoch, which the reconnecting client cannot resume. It starts over on it
// instead, flushing the part of the old one it loaded (the target was empty
// when it began), and ends equal.
TEST_F(FaultTest, ServerRestartedMidTransferIsStartedOverOnItsNewEpoch) {
  fill_keys_with_ttls();
  RedisProcess replica;
  ASSERT_TRUE(replica.started()) << replica.start_error();
  std::optional<SidecarServer> server(std::in_place, master_.address());
  ASSERT_TRUE(server->wait_ready()) << server->describe();
  const std::string port = std::to_string(server->port());

  replica.run({"CLIENT", "PAUSE", "20000", "WRITE"});
  std::vector<std::string> args = {client_binary(),
                                   sidecar_host(),
                                   port,
                                   "--redis",
                                   replica.address(),
                                   "--transport",
                                   test_transport(),
                                   "--chunk-size",
                                   "64k",
                                   "--in-flight",
                                   "2"};
  Process client(args);
  ASSERT_TRUE(
      client.wait_for_line("table epoch", std::chrono::seconds(30), Process::Stream::kStderr))
      << client.describe();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // read-ahead fills up
  server->process().signal(SIGKILL);
  server.reset();
  replica.run({"CLIENT", "UNPAUSE"});
  server.emplace(master_.address(), std::vector<std::string>{"--port", port});
  ASSERT_TRUE(server->wait_ready()) << server->describe();

  EXPECT_EQ(client.wait(std::chrono::seconds(120)), 0) << client.describe() << server->describe();
  EXPECT_NE(client.stderr_text().find("starting over on epoch"), std::string::npos)
      << client.describe();
  EXPECT_NE(client.stderr_text().find("flushing the target"), std::string::npos)
      << client.describe();
  EXPECT_EQ(replica.digest(), master_.digest()) << client.describe();
}

// A byte of the table flipped after its CRC was taken (the sidecar's test
// hook, RRS_TEST_CORRUPT_SLOT): the client re-reads the record, finds it bad
// again, reports it and loads everything else; nothing corrupt reaches
// RESTORE, and --atomic then swaps nothing in.
TEST_F(FaultTest, CorruptRecordIsReportedNeverLoaded) {
  fill_strings(master_, 0, "k:", 100, 200);
  SidecarServer server(master_.address(), {"--source", "scan"}, {{"RRS_TEST_CORRUPT_SLOT", "5"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess replica;
  ASSERT_TRUE(replica.started()) << replica.start_error();
  ClientRun run = sync_to(server.port(), replica);
  EXPECT_EQ(run.exit_code, exit_code::kPartial) << run.describe();
  EXPECT_NE(run.err.find("record 5 not loaded"), std::string::npos) << run.describe();
  EXPECT_EQ(run.count("failed"), 1u) << run.describe();
  EXPECT_EQ(total_keys(replica.keyspace()), 99u);
  // Every key that did arrive is the master's, byte for byte.
  for (int i = 0; i < 100; ++i) {
    const std::string key = "k:" + std::to_string(i);
    Reply got = replica.command({"GET", key});
    if (got && got->type == REDIS_REPLY_NIL) continue;
    Reply want = master_.command({"GET", key});
    ASSERT_TRUE(got && want && got->type == REDIS_REPLY_STRING) << key;
    EXPECT_EQ(std::string(got->str, got->len), std::string(want->str, want->len)) << key;
  }

  RedisProcess atomic;
  ASSERT_TRUE(atomic.started()) << atomic.start_error();
  atomic.run({"SET", "old", "data"});
  ClientRun swap = sync_to(server.port(), atomic, {"--atomic", "--flush"});
  EXPECT_NE(swap.exit_code, 0) << swap.describe();
  EXPECT_EQ(total_keys(atomic.keyspace()), 1u) << swap.describe();  // only the old data
}

// A DUMP that fails with anything but NOPERM leaves its key out of the table.
// Here the master has no DUMP at all (renamed away), so every DUMP answers
// "ERR unknown command", the way a key of a module type without DUMP support
// answers: a real error reply, not a key deleted in between (a nil DUMP, which
// counts as vanished). The sidecar counted the keys but published the table
// as whole, and the client loaded nothing and exited 0; the warning printed
// the key's raw bytes. Now the ready line and the table header count them
// (keys_lost), the log names them escaped, and a client refuses the table
// unless --allow-missing-keys.
TEST_F(FaultTest, KeysTheScanSourceCannotDumpAreCountedAndRefused) {
  RedisProcess master(RedisOptions().with_args({"--rename-command", "DUMP", "DUMP-IS-OFF"}));
  ASSERT_TRUE(master.started()) << master.start_error();
  master.run({"SET", std::string("bin\nkey\x1b", 8), "v"});
  fill_strings(master, 0, "k:", 9, 10);
  SidecarServer server(master.address(), {"--source", "scan"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(field_u64(server.ready_fields(), "keys_lost"), 10u) << server.ready_line();
  EXPECT_EQ(field_u64(server.ready_fields(), "records"), 0u) << server.ready_line();
  // stderr is read apart from stdout: the ready line may come in first.
  EXPECT_TRUE(server.process().wait_for_line("DUMP of key", std::chrono::seconds(10),
                                             Process::Stream::kStderr));
  const std::string err = server.process().stderr_text();
  EXPECT_EQ(err.find(std::string("bin\nkey")), std::string::npos) << err;
  EXPECT_NE(err.find("DUMP of key 'bin\\x0akey\\x1b' in DB 0 failed: ERR unknown command"),
            std::string::npos)
      << err;

  RedisProcess replica;
  ASSERT_TRUE(replica.started()) << replica.start_error();
  ClientRun run = sync_to(server.port(), replica);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("lacks 10 keys"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("--allow-missing-keys"), std::string::npos) << run.describe();
  EXPECT_FALSE(run.has_summary) << run.describe();

  ClientRun allowed = sync_to(server.port(), replica, {"--allow-missing-keys"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.describe();
  EXPECT_NE(allowed.err.find("lacks 10 keys"), std::string::npos) << allowed.describe();
  EXPECT_EQ(total_keys(replica.keyspace()), 0u);
}

// Over verbs the sidecar hears nothing of one-sided READs and drops a client
// that sends no keepalive for 10 s (5 x 2 s). A client whose target Redis
// stalls longer than that, while it prepares the target (FLUSHALL) or while
// it loads, must keep saying it is alive, and then finish on its first
// connection (not dropped and resumed).
class StalledTargetTest : public FaultTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StalledTargetTest, StallPastTheKeepaliveLimitStillFinishes) {
  const bool during_flush = GetParam();
  fill_strings(master_, 0, "k:", 25000, 1000);
  RedisProcess replica;
  ASSERT_TRUE(replica.started()) << replica.start_error();
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  std::vector<std::string> extra = {"--chunk-size", "64k", "--in-flight", "2"};
  if (during_flush) {
    replica.run({"SET", "old", "x"});
    extra.push_back("--flush");  // FLUSHALL waits out the pause
  }
  replica.run({"CLIENT", "PAUSE", "14000", "WRITE"});  // lifts itself after 14 s
  ClientRun run = sync_to(server.port(), replica, extra);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica.digest(), master_.digest());
  EXPECT_EQ(run.err.find("reconnect"), std::string::npos) << run.describe();
  EXPECT_EQ(server.process().stderr_text().find("keepalive"), std::string::npos)
      << server.describe();
}

INSTANTIATE_TEST_SUITE_P(Stalls, StalledTargetTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "WhileFlushing" : "WhileLoading"; });

}  // namespace
}  // namespace rrs::test
