// Redis Functions travel with the table: the scan source (--source scan)
// puts the master's FUNCTION DUMP in it, and rdma-client restores it before the keys, by the
// target policy: APPEND by default (a library the target already has is
// refused), FLUSH with --flush, REPLACE with --merge.
#include <gtest/gtest.h>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

class FunctionsTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(replica_.started()) << replica_.start_error();
    fill_strings(master_, 0, "k:", 50);
  }

  // The master's two libraries: lib1 (f1 returns 1), lib2 (f2 returns 2, f3 returns 3).
  void load_master_functions() {
    master_.run({"FUNCTION", "LOAD", lua_library("lib1", "f1", 1)});
    master_.run({"FUNCTION", "LOAD",
                 lua_library("lib2", "f2", 2) +
                     "redis.register_function('f3', function(keys, args) return 3 end)\n"});
    ASSERT_FALSE(HasFailure());
  }

  void start_server() {
    server_.emplace(master_.address(), std::vector<std::string>{"--source", "scan"});
    ASSERT_TRUE(server_->wait_ready()) << server_->describe();
  }

  int64_t fcall(RedisProcess& redis, const std::string& function) {
    Reply r = redis.run({"FCALL", function, "0"});
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  }

  RedisProcess replica_;
  std::optional<SidecarServer> server_;
};

TEST_F(FunctionsTest, ScanSourceCarriesTheMastersLibraries) {
  load_master_functions();
  start_server();
  ClientRun run = sync_to(server_->port(), replica_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  ASSERT_TRUE(run.has_summary) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  EXPECT_EQ(run.count("scripts"), 0u) << run.describe();
  EXPECT_EQ(run.count("keys"), 50u) << run.describe();
  EXPECT_EQ(replica_.client().functions(), master_.client().functions());
  EXPECT_EQ(fcall(replica_, "f3"), 3);
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(FunctionsTest, NoLoadValidatesTheFunctionsAndAppliesNothing) {
  load_master_functions();
  start_server();
  ClientRun run = run_client({sidecar_host(), std::to_string(server_->port()), "--transport",
                              test_transport(), "--no-load", "--redis", "127.0.0.1:1"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find(" functions=2 scripts=0 "), std::string::npos) << run.describe();
  EXPECT_TRUE(replica_.client().functions().empty());
}

TEST_F(FunctionsTest, DefaultPolicyAddsToTheTargetsOtherLibraries) {
  load_master_functions();
  replica_.run({"FUNCTION", "LOAD", lua_library("mine", "g1", 7)});
  start_server();
  ClientRun run = sync_to(server_->port(), replica_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  auto libraries = replica_.client().functions();
  EXPECT_EQ(libraries.size(), 3u);
  EXPECT_EQ(libraries["lib1"], master_.client().functions()["lib1"]);
  EXPECT_EQ(fcall(replica_, "g1"), 7);
}

TEST_F(FunctionsTest, DefaultPolicyRefusesALibraryTheTargetAlreadyHas) {
  load_master_functions();
  replica_.run({"FUNCTION", "LOAD", lua_library("lib1", "f1", 100)});
  auto before = replica_.client().functions();
  start_server();
  ClientRun run = sync_to(server_->port(), replica_);
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("lib1"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("--flush"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("--merge"), std::string::npos) << run.describe();
  // FUNCTION RESTORE is all or nothing, and no key is loaded after a refusal.
  EXPECT_EQ(replica_.client().functions(), before);
  EXPECT_EQ(replica_.keyspace(), Keyspace{});
}

TEST_F(FunctionsTest, FlushReplacesEveryFunctionOfTheTarget) {
  load_master_functions();
  replica_.run({"FUNCTION", "LOAD", lua_library("lib1", "f1", 100)});
  replica_.run({"FUNCTION", "LOAD", lua_library("mine", "g1", 7)});
  replica_.run({"SET", "extra", "x"});
  start_server();
  ClientRun run = sync_to(server_->port(), replica_, {"--flush"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  EXPECT_EQ(replica_.client().functions(), master_.client().functions());
  EXPECT_EQ(fcall(replica_, "f1"), 1);
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(FunctionsTest, FlushRemovesTheTargetsFunctionsWhenTheMasterHasNone) {
  replica_.run({"FUNCTION", "LOAD", lua_library("mine", "g1", 7)});
  start_server();
  ClientRun run = sync_to(server_->port(), replica_, {"--flush"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("functions"), 0u) << run.describe();
  EXPECT_TRUE(replica_.client().functions().empty());
  EXPECT_EQ(replica_.digest(), master_.digest());
}

TEST_F(FunctionsTest, MergeReplacesLibrariesOfTheSameNameAndKeepsTheRest) {
  load_master_functions();
  replica_.run({"FUNCTION", "LOAD", lua_library("lib1", "f1", 100)});
  replica_.run({"FUNCTION", "LOAD", lua_library("mine", "g1", 7)});
  start_server();
  ClientRun run = sync_to(server_->port(), replica_, {"--merge"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  auto libraries = replica_.client().functions();
  auto want = master_.client().functions();
  EXPECT_EQ(libraries.size(), 3u);
  EXPECT_EQ(libraries["lib1"], want["lib1"]);
  EXPECT_EQ(libraries["lib2"], want["lib2"]);
  EXPECT_EQ(fcall(replica_, "f1"), 1);
  EXPECT_EQ(fcall(replica_, "g1"), 7);
}

TEST_F(FunctionsTest, MergeRefusesAFunctionNameAnotherLibraryHolds) {
  load_master_functions();
  replica_.run({"FUNCTION", "LOAD", lua_library("mine", "f1", 100)});
  auto before = replica_.client().functions();
  start_server();
  ClientRun run = sync_to(server_->port(), replica_, {"--merge"});
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_NE(run.err.find("f1"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("--flush"), std::string::npos) << run.describe();
  EXPECT_EQ(replica_.client().functions(), before);
}

}  // namespace
}  // namespace rrs::test
