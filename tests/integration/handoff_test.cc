// How --handoff judges the target's resync (client/replica/handoff.h,
// judge_resync): by the target's own replication backlog, which a partial
// resync keeps and a full one replaces. The master's sync_partial_ok and
// sync_full count every replica, so they are not enough: here a second
// replica of the same master does a partial resync of its own while the
// target comes back, and the old check (sync_partial_ok grew: "partial")
// would have called the target's full resync a partial one.
//
// Real redis-servers: a master, `other` and `target`, both its replicas. The
// target steps away (REPLICAOF a port nobody listens on), the master writes,
// `other` loses its link (CLIENT KILL) and resyncs, and the target comes back.
#include <gtest/gtest.h>

#include <string>

#include "client/replica/handoff.h"
#include "common/redis/redis_client.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/redis_client.h"
#include "tests/support/redis_process.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

class HandoffJudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (RedisProcess* r : {&master_, &other_, &target_})
      ASSERT_TRUE(r->started()) << r->start_error();
    // A small backlog, so that a few hundred KiB push the target out of it;
    // no delay before a full sync's RDB.
    master_.run({"CONFIG", "SET", "repl-backlog-size", "16384"});
    master_.run({"CONFIG", "SET", "repl-diskless-sync-delay", "0"});
    follow(other_);
    follow(target_);
    // Bytes in the target's own backlog past its full sync.
    fill_strings(master_, 0, "k:", 100, 20);
    ASSERT_TRUE(caught_up(target_));
    ASSERT_TRUE(caught_up(other_));
  }

  void follow(RedisProcess& r) {
    r.run({"REPLICAOF", "127.0.0.1", std::to_string(master_.port())});
    ASSERT_TRUE(link_up(r)) << r.log();
  }
  bool link_up(RedisProcess& r) {
    return eventually(
        [&] {
          return r.fresh_info_field("replication", "master_link_status") == "up" &&
                 r.fresh_info_field("replication", "master_port") == std::to_string(master_.port());
        },
        30s);
  }
  bool caught_up(RedisProcess& r) {
    return eventually(
        [&] {
          return r.fresh_info_field("replication", "master_repl_offset") ==
                 master_.fresh_info_field("replication", "master_repl_offset");
        },
        30s);
  }
  uint64_t counter(const std::string& field) {
    return std::stoull(master_.fresh_info_field("stats", field));
  }

  struct Outcome {
    Resync judged = Resync::kUnknown;
    uint64_t partial = 0, full = 0;  // the master's counters, grown by
  };
  // The target steps away, the master writes `count` values of 1000 bytes,
  // `other` loses its link, and both come back.
  Outcome step_away_and_back(size_t count) {
    Outcome o;
    target_.run({"REPLICAOF", "127.0.0.1", std::to_string(closed_loopback_port())});
    const std::string before = text(target_.run({"INFO", "replication"}));
    const uint64_t offset = std::stoull(info_field(before, "master_repl_offset"));
    fill_strings(master_, 0, "more:", count, 1000);
    EXPECT_TRUE(caught_up(other_));
    const uint64_t partial0 = counter("sync_partial_ok"), full0 = counter("sync_full");

    master_.run({"CLIENT", "KILL", "TYPE", "replica"});  // `other`: the only one linked
    target_.run({"REPLICAOF", "127.0.0.1", std::to_string(master_.port())});
    EXPECT_TRUE(link_up(target_)) << target_.log();
    EXPECT_TRUE(link_up(other_)) << other_.log();
    EXPECT_TRUE(eventually([&] { return counter("sync_partial_ok") > partial0; }, 30s));
    const std::string after = text(target_.run({"INFO", "replication"}));
    o.judged = judge_resync(before, after, offset);
    o.partial = counter("sync_partial_ok") - partial0;
    o.full = counter("sync_full") - full0;
    return o;
  }

  RedisProcess master_, other_, target_;
};

TEST_F(HandoffJudgeTest, AnotherReplicasPartialResyncDoesNotHideAFullOne) {
  // 200 KiB: far past the master's 16 KiB backlog, so the target gets a full
  // resync, while `other` (which has every byte) continues.
  Outcome o = step_away_and_back(200);
  EXPECT_EQ(o.full, 1u);
  EXPECT_GE(o.partial, 1u) << "the master-wide counter the old check trusted grew";
  EXPECT_EQ(o.judged, Resync::kFull);
  EXPECT_EQ(target_.digest(), master_.digest());
}

TEST_F(HandoffJudgeTest, APartialResyncAlongsideAnotherIsRecognized) {
  Outcome o = step_away_and_back(4);  // well within the backlog
  EXPECT_EQ(o.full, 0u);
  EXPECT_EQ(o.partial, 2u);
  EXPECT_EQ(o.judged, Resync::kPartial);
  EXPECT_EQ(target_.digest(), master_.digest());
}

// A target with no byte past its own full sync: its backlog cannot tell.
TEST_F(HandoffJudgeTest, ABacklogWithNothingBeforeTheOffsetCannotTell) {
  RedisProcess fresh;
  ASSERT_TRUE(fresh.started()) << fresh.start_error();
  follow(fresh);
  ASSERT_TRUE(caught_up(fresh));
  const std::string repl = text(fresh.run({"INFO", "replication"}));
  const uint64_t offset = std::stoull(info_field(repl, "master_repl_offset"));
  const uint64_t first = std::stoull(info_field(repl, "repl_backlog_first_byte_offset"));
  if (first <= offset) GTEST_SKIP() << "the master wrote (a PING) since the sync";
  EXPECT_EQ(judge_resync(repl, repl, offset), Resync::kUnknown);
}

}  // namespace
}  // namespace rrs::test
