// --source psync against real masters: the table is the keyspace as of the
// replication offset in the ready line (checked by construction under a
// writer), both RDB framings, a master that drops the link mid-RDB or after
// the table, a full resync that publishes a new epoch, and refusals that
// name the fix.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

class PsyncTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
  }

  // Loads the served table into a fresh replica and compares it with the master.
  void expect_replica_equals_master(uint16_t server_port) {
    RedisProcess fresh;
    ASSERT_TRUE(fresh.started()) << fresh.start_error();
    ClientRun run = sync_to(server_port, fresh);
    EXPECT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_EQ(fresh.digest(), master_.digest());
    EXPECT_EQ(fresh.client().state_outside_digest(), master_.client().state_outside_digest());
  }

  RedisProcess replica_;
};

TEST_F(PsyncTest, EveryTypeAndTheMastersReplicationPosition) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const Fields& f = server.ready_fields();
  EXPECT_EQ(f.at("source"), "psync") << server.ready_line();
  EXPECT_EQ(f.at("replid"), master_.info_field("replication", "master_replid"));
  EXPECT_LE(field_u64(f, "offset"),
            std::stoull(master_.info_field("replication", "master_repl_offset")));
  EXPECT_EQ(field_u64(f, "functions"), master_.client().functions().size());
  expect_replica_equals_master(server.port());

  // The sidecar stays attached as a replica that acknowledges the stream.
  master_.run({"SET", "after", "the snapshot"});
  std::string want = master_.info_field("replication", "master_repl_offset");
  std::string slave;
  for (int i = 0; i < 50 && slave.find("offset=" + want + ",") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);
    slave = master_.info_field("replication", "slave0");
  }
  EXPECT_NE(slave.find("state=online"), std::string::npos) << slave;
  EXPECT_NE(slave.find("port=" + std::to_string(server.port())), std::string::npos) << slave;
  EXPECT_NE(slave.find("offset=" + want + ","), std::string::npos) << slave << " want " << want;
}

// SIGUSR1 asks for a snapshot. One sent while the first is still being taken
// (the master's fork writes its RDB slowly here) killed the sidecar, whose
// handler went in only once that table was published.
TEST_F(PsyncTest, SigusrBeforeTheFirstTableIsHarmless) {
  fill_strings(master_, 0, "slow:", 2000, 20);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});  // ~2 s of RDB
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.process().wait_for_line("snapshotting", 30s, Process::Stream::kStderr))
      << server.describe();
  server.process().signal(SIGUSR1);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(server.process().running()) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos)
      << "the signal came after the first table, not before it: " << server.describe();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  // The signal's snapshot comes right after the first: a client reading the
  // first table meanwhile would see it replaced mid-read.
  ASSERT_TRUE(server.process().wait_for_line("published", 60s)) << server.describe();
  EXPECT_TRUE(server.process().running()) << server.describe();
  expect_replica_equals_master(server.port());
}

TEST_F(PsyncTest, DiskBasedFramingWithLengthAndAll16Dbs) {
  // Without diskless sync the master writes the RDB to disk and sends
  // "$<len>": the other framing.
  master_.run({"CONFIG", "SET", "repl-diskless-sync", "no"});
  fill_all_types(master_);
  for (int db = 0; db < 16; ++db) fill_strings(master_, db, "every-db:", 20, 50);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  expect_replica_equals_master(server.port());
}

TEST_F(PsyncTest, SnapshotIsPointInTimeUnderWrites) {
  // A writer moves "last" to i and k<i % 1000> to i in one transaction, as
  // fast as it can, while the master forks and its child (slowed down per
  // key) writes the RDB. A point-in-time table holds, for the "last" it
  // holds, exactly the k values that follow from it; a walk of a live
  // keyspace (SCAN) would mix older and newer ones.
  constexpr int kSlots = 1000;
  fill_strings(master_, 0, "filler:", 40000, 100);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "40"});  // ~1.6 s of RDB
  std::atomic<bool> stop{false};
  std::atomic<int64_t> written{0};
  std::thread writer([&] {
    auto conn = master_.connect();
    ASSERT_TRUE(conn.ok());
    for (int64_t i = 1; !stop.load(); ++i) {
      conn->command({"MULTI"});
      conn->command({"SET", "k" + std::to_string(i % kSlots), std::to_string(i)});
      conn->command({"SET", "last", std::to_string(i)});
      conn->command({"EXEC"});
      written = i;
    }
  });
  while (written.load() < 2000) std::this_thread::sleep_for(10ms);
  SidecarServer server(master_.address());
  bool ready = server.wait_ready();
  int64_t at_ready = written.load();
  stop = true;
  writer.join();
  ASSERT_TRUE(ready) << server.describe();
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});

  ClientRun run = sync_to(server.port(), replica_);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  int64_t last = std::stoll(text(replica_.command({"GET", "last"})));
  EXPECT_GT(last, 2000);
  EXPECT_LT(last, at_ready) << "the writer should have kept writing while the child saved";
  for (int j = 0; j < kSlots; ++j) {
    int64_t want = last -
                   ((last - j) % kSlots + kSlots) % kSlots;  // largest i <= last, i = j mod N
    Reply got = replica_.command({"GET", "k" + std::to_string(j)});
    ASSERT_EQ(text(got), std::to_string(want)) << "k" << j << " with last=" << last;
  }
}

TEST_F(PsyncTest, LinkDroppedMidRdbIsRetried) {
  fill_strings(master_, 0, "k:", 30000, 100);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "100"});  // ~3 s of RDB
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.process().wait_for_line("began a full resync", 30s, Process::Stream::kStderr))
      << server.describe();
  std::this_thread::sleep_for(500ms);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  master_.run({"CLIENT", "KILL", "TYPE", "replica"});
  EXPECT_TRUE(server.process().wait_for_line("retrying", 30s, Process::Stream::kStderr))
      << server.describe();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  expect_replica_equals_master(server.port());
}

TEST_F(PsyncTest, LinkLostAfterTheTableContinuesWithAPartialResync) {
  fill_strings(master_, 0, "k:", 100);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  master_.run({"SET", "during", "the outage"});
  master_.run({"CLIENT", "KILL", "TYPE", "replica"});
  EXPECT_TRUE(server.process().wait_for_line("partial resync", 30s, Process::Stream::kStderr))
      << server.describe();
  EXPECT_EQ(master_.info_field("stats", "sync_partial_ok"), "1");
  EXPECT_EQ(master_.info_field("stats", "sync_full"), "1");
  EXPECT_EQ(server.process().stdout_text().find("published"), std::string::npos);
}

TEST_F(PsyncTest, FullResyncOnReconnectPublishesANewEpoch) {
  fill_strings(master_, 0, "k:", 100);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  fill_strings(master_, 2, "new:", 50);
  // A new replication ID leaves the master no history for our offset.
  master_.run({"DEBUG", "CHANGE-REPL-ID"});
  master_.run({"CLIENT", "KILL", "TYPE", "replica"});
  auto line = server.process().wait_for_line("published", 30s);
  ASSERT_TRUE(line) << server.describe();
  Fields f = parse_fields(*line);
  EXPECT_EQ(f["replid"], master_.info_field("replication", "master_replid"));
  EXPECT_NE(f["epoch"], server.ready_fields().at("epoch"));
  std::this_thread::sleep_for(200ms);  // the loop publishes it
  expect_replica_equals_master(server.port());
}

// A new history whose table cannot be published everywhere (the test hook
// fails it after both transports took it, as a verbs registration failing
// after the TCP publish would): the old change log would never grow again,
// so the sidecar marks it superseded and exits 4 rather than serve it
// frozen; a follower of it does not idle on.
TEST_F(PsyncTest, FailedRepublishStopsTheSidecar) {
  master_.run({"CONFIG", "SET", "repl-ping-replica-period", "1"});
  fill_strings(master_, 0, "k:", 100);
  SidecarServer server(master_.address(), {}, {{"RRS_TEST_FAIL_REPUBLISH", "1"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  Process follower({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                    replica_.address(), "--follow", "--status-interval", "1", "--transport",
                    test_transport(), "--connect-timeout", "2", "--log-stall", "5", "--quiet"});
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  master_.run({"DEBUG", "CHANGE-REPL-ID"});
  master_.run({"CLIENT", "KILL", "TYPE", "replica"});
  EXPECT_EQ(server.process().wait(30s), exit_code::kBadData) << server.describe();
  EXPECT_NE(server.process().stderr_text().find("can no longer grow"), std::string::npos)
      << server.describe();
  // It resyncs from a sidecar that is gone, or calls the log stalled.
  const int code = follower.wait(30s);
  EXPECT_EQ(code, exit_code::kUnavailable) << follower.describe();
}

// A new history whose RDB the sidecar cannot parse (the test hook limits
// its values; a real master could send a module type or a newer format): the
// link is given up, so the sidecar marks its log superseded and exits 4
// rather than serve a table whose log never grows, and asking the master to
// fork again would only fail on the same bytes.
TEST_F(PsyncTest, UnparseableNewHistoryStopsTheSidecar) {
  master_.run({"CONFIG", "SET", "repl-ping-replica-period", "1"});
  fill_strings(master_, 0, "k:", 100);
  SidecarServer server(master_.address(), {}, {{"RRS_TEST_NEW_HISTORY_VALUE_LIMIT", "4096"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  Process follower({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                    replica_.address(), "--follow", "--status-interval", "1", "--transport",
                    test_transport(), "--connect-timeout", "2", "--log-stall", "5", "--quiet"});
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  master_.run({"SET", "big", std::string(size_t{64} << 10, 'v')});
  master_.run({"DEBUG", "CHANGE-REPL-ID"});
  master_.run({"CLIENT", "KILL", "TYPE", "replica"});
  EXPECT_EQ(server.process().wait(30s), exit_code::kBadData) << server.describe();
  const std::string log = server.process().stderr_text();
  EXPECT_NE(log.find("new snapshot of the master's new history"), std::string::npos)
      << server.describe();
  EXPECT_NE(log.find("can no longer grow"), std::string::npos) << server.describe();
  EXPECT_EQ(follower.wait(30s), exit_code::kUnavailable) << follower.describe();
  // The master forked once for the new history, not again for the same bytes.
  EXPECT_EQ(master_.info_field("stats", "sync_full"), "2");
}

TEST_F(PsyncTest, MinimalAclUserIsEnough) {
  fill_strings(master_, 0, "k:", 100);
  master_.run(
      {"ACL", "SETUSER", "sidecar", "on", ">side-pw", "-@all", "+psync", "+replconf", "+ping"});
  SidecarServer server(master_.address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "sidecar side-pw"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  expect_replica_equals_master(server.port());
}

TEST_F(PsyncTest, RefusedPsyncNamesScanAsTheWayOut) {
  master_.run({"ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@all", "-psync", "-sync"});
  SidecarServer server(master_.address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "reader pw"}});
  EXPECT_EQ(server.process().wait(30s), exit_code::kUnavailable) << server.describe();
  EXPECT_NE(server.process().stderr_text().find("--source scan"), std::string::npos)
      << server.describe();
}

TEST_F(PsyncTest, ScanSourceStillServesEverything) {
  fill_all_types(master_);
  SidecarServer server(master_.address(), {"--source", "scan"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("source"), "scan");
  expect_replica_equals_master(server.port());
}

}  // namespace
}  // namespace rrs::test
