// The follower's applier against a real redis-server: the replication stream
// is applied in order, SELECT is tracked, a MULTI block split across batches
// is held until its EXEC, PING and REPLCONF are dropped, and a command the
// target refuses stops it with the command and its stream offset.
#include "client/follow/stream_applier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/redis_process.h"

namespace rrs {
namespace {

using test::RedisProcess;
using test::resp_command;

class StreamApplierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(target_.started()) << target_.start_error();
    auto c = target_.connect();
    ASSERT_TRUE(c.ok()) << c.status().message();
    applier_.emplace(std::move(*c).release(), kStart);
  }

  // Feeds `bytes` and adds every complete command, then flushes.
  Status apply(const std::string& bytes) {
    parser_.feed(bytes);
    while (true) {
      auto cmd = parser_.next();
      if (!cmd.ok()) return cmd.status();
      if (!*cmd) break;
      RRS_RETURN_IF_ERROR(applier_->add(**cmd, kStart + parser_.consumed()));
    }
    return applier_->flush();
  }

  std::string get(int db, const std::string& key) {
    target_.client().select(db);
    test::Reply r = target_.command({"GET", key});
    return r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "(nil)";
  }

  static constexpr uint64_t kStart = 1000;
  RedisProcess target_;
  resp::CommandParser parser_;
  std::optional<StreamApplier> applier_;
};

TEST_F(StreamApplierTest, AppliesInOrderAcrossDbs) {
  std::string stream = resp_command({"SELECT", "2"}) + resp_command({"SET", "a", "1"}) +
                       resp_command({"PING"}) + resp_command({"REPLCONF", "GETACK", "*"}) +
                       resp_command({"INCR", "a"}) + resp_command({"SELECT", "0"}) +
                       resp_command({"SET", "b", "x"});
  ASSERT_TRUE(apply(stream).ok());
  EXPECT_EQ(applier_->applied(), kStart + stream.size());
  EXPECT_EQ(applier_->db(), 0u);
  EXPECT_EQ(applier_->commands(), 5u);  // PING and REPLCONF are not applied
  EXPECT_EQ(get(2, "a"), "2");
  EXPECT_EQ(get(0, "b"), "x");
}

TEST_F(StreamApplierTest, HoldsATransactionUntilItsExec) {
  std::string before = resp_command({"SET", "t", "0"});
  std::string first = before + resp_command({"MULTI"}) + resp_command({"SET", "t", "1"}) +
                      resp_command({"SELECT", "3"});
  ASSERT_TRUE(apply(first).ok());
  EXPECT_TRUE(applier_->in_transaction());
  EXPECT_EQ(applier_->applied(), kStart + before.size());  // the block is not applied yet
  EXPECT_EQ(get(0, "t"), "0");

  std::string second = resp_command({"SET", "t3", "3"}) + resp_command({"EXEC"});
  ASSERT_TRUE(apply(second).ok());
  EXPECT_FALSE(applier_->in_transaction());
  EXPECT_EQ(applier_->applied(), kStart + first.size() + second.size());
  EXPECT_EQ(applier_->db(), 3u);
  EXPECT_EQ(applier_->commands(), 4u);
  EXPECT_EQ(get(0, "t"), "1");
  EXPECT_EQ(get(3, "t3"), "3");
}

TEST_F(StreamApplierTest, ARefusedCommandStopsItWithItsOffset) {
  std::string good = resp_command({"SET", "s", "text"});
  std::string bad = resp_command({"INCR", "s"});  // not an integer: the target refuses
  Status s = apply(good + bad + resp_command({"SET", "after", "1"}));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("INCR"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::to_string(kStart + good.size() + bad.size())), std::string::npos)
      << s.message();
  EXPECT_EQ(applier_->applied(), kStart + good.size());
}

TEST_F(StreamApplierTest, AFailedCommandInsideATransactionIsRefusedToo) {
  Status s = apply(resp_command({"SET", "s", "text"}) + resp_command({"MULTI"}) +
                   resp_command({"INCR", "s"}) + resp_command({"EXEC"}));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("transaction"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rrs
