// End to end: rdma-server snapshots a master, rdma-client loads it into a
// replica, and the replica ends up identical (DEBUG DIGEST, per-DB counts,
// and what the digest leaves out: exact expiries, stream groups, functions).
#include <gtest/gtest.h>

#include <thread>

#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

class SyncTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
  }

  RedisProcess replica_;
};

TEST_F(SyncTest, FullSyncOfEveryType) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  Keyspace want = master_.keyspace();

  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(field_u64(server.ready_fields(), "records"), total_keys(want)) << server.ready_line();

  ClientRun run = sync_to(server.port(), replica_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  ASSERT_TRUE(run.has_summary) << run.describe();
  EXPECT_EQ(run.count("keys"), total_keys(want)) << run.describe();
  EXPECT_EQ(run.count("skipped_expired"), 0u) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  EXPECT_EQ(run.count("scripts"), 0u) << run.describe();

  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(replica_.keyspace(), want);
  EXPECT_EQ(replica_.client().functions().size(), 2u);
  EXPECT_EQ(replica_.client().state_outside_digest(), master_.client().state_outside_digest());

  // The server keeps serving after a client is done, then stops cleanly.
  EXPECT_TRUE(server.process().running()) << server.describe();
  EXPECT_EQ(server.process().terminate(std::chrono::seconds(10)), 0) << server.describe();
}

// --cpu on both programs: each says where it runs, and the sync is the same.
TEST_F(SyncTest, BothProgramsRunOnTheCpusGiven) {
  fill_strings(master_, 0, "k:", 300);
  SidecarServer server(master_.address(), {"--cpu", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_NE(server.process().stderr_text().find("running on CPUs 0"), std::string::npos)
      << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--cpu", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.err.find("running on CPUs 0"), std::string::npos) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(SyncTest, TwoClientsFromOneSnapshot) {
  fill_strings(master_, 0, "k:", 500);
  fill_strings(master_, 3, "k3:", 50, 20000);
  RedisProcess second;
  ASSERT_TRUE(second.started()) << second.start_error();

  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun a = sync_to(server.port(), replica_);
  ClientRun b = sync_to(server.port(), second);
  EXPECT_EQ(a.exit_code, 0) << a.describe();
  EXPECT_EQ(b.exit_code, 0) << b.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(second.digest(), master_.digest());
}

// "auto" on both sides settles on a transport that works: TCP without an RDMA
// device (as on the host), verbs in the Soft-RoCE VM.
TEST_F(SyncTest, AutoTransportOnBothSides) {
  fill_strings(master_, 0, "k:", 100);
  SidecarServer server(master_.address(), {"--transport", "auto"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), replica_, {"--transport", "auto"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(SyncTest, EmptyMaster) {
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(field_u64(server.ready_fields(), "records"), 0u) << server.ready_line();

  ClientRun run = sync_to(server.port(), replica_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  ASSERT_TRUE(run.has_summary) << run.describe();
  EXPECT_EQ(run.count("keys"), 0u) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(replica_.keyspace(), Keyspace{});
  EXPECT_EQ(server.process().terminate(std::chrono::seconds(10)), 0) << server.describe();
}

TEST_F(SyncTest, KeyExpiredBetweenSnapshotAndLoadIsSkipped) {
  fill_strings(master_, 0, "k:", 20);
  master_.run({"HSET", "short-lived", "f", "v"});
  // Long enough for the snapshot to catch it alive (a snapshot took 3.9 s in
  // the Soft-RoCE guest on a busy machine), short enough to expire before
  // the client runs.
  master_.run({"PEXPIRE", "short-lived", "15000"});
  Reply at = master_.run({"PEXPIRETIME", "short-lived"});
  ASSERT_TRUE(at && at->integer > 0);

  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ASSERT_EQ(field_u64(server.ready_fields(), "records"), 21u)
      << "the snapshot must include the short-lived key; " << server.ready_line();

  // Until the key's absolute expiry time (on this host's clock) has passed.
  auto expire_at = std::chrono::system_clock::time_point(std::chrono::milliseconds(at->integer));
  std::this_thread::sleep_until(expire_at + std::chrono::milliseconds(300));

  ClientRun run = sync_to(server.port(), replica_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  ASSERT_TRUE(run.has_summary) << run.describe();
  EXPECT_EQ(run.count("skipped_expired"), 1u) << run.describe();
  EXPECT_EQ(run.count("keys"), 20u) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();

  // Make the master drop the key now rather than at its next active-expire cycle.
  master_.run({"EXISTS", "short-lived"});
  EXPECT_EQ(replica_.run({"EXISTS", "short-lived"})->integer, 0);
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(replica_.keyspace(), master_.keyspace());
}

}  // namespace
}  // namespace rrs::test

namespace rrs::test {
namespace {

TEST_F(SyncTest, NoLoadValidatesTheTableAndWritesNothing) {
  fill_strings(master_, 0, "k:", 300, 2000);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = run_client({sidecar_host(), std::to_string(server.port()), "--transport",
                              test_transport(), "--no-load", "--redis", "127.0.0.1:1"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("fetched keys=300 "), std::string::npos) << run.describe();
  EXPECT_EQ(total_keys(replica_.keyspace()), 0u);
}

}  // namespace
}  // namespace rrs::test
