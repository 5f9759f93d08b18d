// What rdma-client does to a target that already holds data: refuse by
// default, replace everything with --flush, or overlay with --merge.
#include <gtest/gtest.h>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

class TargetPolicyTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
    fill_strings(master_, 0, "k:", 200);
    fill_strings(master_, 2, "k2:", 30, 5000);
    master_.run({"SET", "shared", "from master"});
    // The target already has a key of its own and a stale copy of a master key.
    replica_.run({"SET", "extra", "only on the target"});
    replica_.client().select(7);
    replica_.run({"SET", "extra7", "only on the target, DB 7"});
    replica_.client().select(0);
    replica_.run({"SET", "shared", "stale"});
    ASSERT_FALSE(HasFailure());
    server_.emplace(master_.address());
    ASSERT_TRUE(server_->wait_ready()) << server_->describe();
  }

  RedisProcess replica_;
  std::optional<SidecarServer> server_;
};

TEST_F(TargetPolicyTest, RefusesNonEmptyTarget) {
  std::string before = replica_.digest();
  ClientRun run = sync_to(server_->port(), replica_);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("--flush"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("--merge"), std::string::npos) << run.describe();
  EXPECT_EQ(replica_.digest(), before) << "a refused run must not touch the target";
}

TEST_F(TargetPolicyTest, FlushReplacesTarget) {
  ClientRun run = sync_to(server_->port(), replica_, {"--flush"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(replica_.keyspace(), master_.keyspace());
}

TEST_F(TargetPolicyTest, MergeKeepsExtraKeysAndReplacesShared) {
  ClientRun run = sync_to(server_->port(), replica_, {"--merge"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(run.count("keys"), master_.client().total_keys()) << run.describe();

  EXPECT_EQ(text(replica_.run({"GET", "extra"})), "only on the target");
  EXPECT_EQ(text(replica_.run({"GET", "shared"})), "from master");
  replica_.client().select(7);
  EXPECT_EQ(text(replica_.run({"GET", "extra7"})), "only on the target, DB 7");
  // Without the target's own keys, the rest is exactly the master's data.
  replica_.run({"DEL", "extra7"});
  replica_.client().select(0);
  replica_.run({"DEL", "extra"});
  EXPECT_EQ(replica_.digest(), master_.digest());
  EXPECT_EQ(replica_.keyspace(), master_.keyspace());
}

}  // namespace
}  // namespace rrs::test
