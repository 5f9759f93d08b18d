// rdma-server --redis <a replica of the master>: the table comes from the
// replica (its PSYNC answers with the master's replication ID and offsets),
// so the master never forks, however many clients sync. Real servers: a
// master with a writer on it, its replica as the sidecar's source, and
// targets that load the table, follow the change log, and hand off to the
// master itself with a partial resync. A replica whose link to its master is
// down is refused at start with the reason; one that loses the link later is
// waited for; one that is promoted (REPLICAOF NO ONE) becomes a new history.
// Each test runs on Redis 7.0 and on a newer server.
#include <gtest/gtest.h>

#include <csignal>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/write_load.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kConvergeWithin = 30s;
constexpr auto kPoll = 100ms;

// The stdout line of `out` that starts with `prefix`; "" if none.
std::string line_starting(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line;
  return "";
}

class ReplicaSourceTest : public SidecarTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    RRS_NEED_SERVER(server_, GetParam());
    master_.emplace(options());
    replica_.emplace(options());
    ASSERT_TRUE(master_->started()) << master_->start_error();
    ASSERT_TRUE(replica_->started()) << replica_->start_error();
    point_replica_at(master_->port());
    ASSERT_TRUE(link_is("up")) << replica_->log();
    // The link reads up before the master streams to it (a master may wait
    // for the replica's first ACK, up to a second): wait for a propagated
    // PUBLISH, which leaves no key behind, so every test starts streaming.
    master_->run({"PUBLISH", "setup", "x"});
    ASSERT_TRUE(eventually(
        [&] {
          return replica_->fresh_info_field("replication", "master_repl_offset") ==
                 master_->fresh_info_field("replication", "master_repl_offset");
        },
        30s, kPoll))
        << replica_->log();
  }

  RedisOptions options() const { return RedisOptions().with_server(server_); }
  // A target for replica mode: loads the RDB straight from the link.
  std::unique_ptr<RedisProcess> new_target() const {
    return std::make_unique<RedisProcess>(options().with_args({"--repl-diskless-load", "swapdb"}));
  }

  void point_replica_at(uint16_t port) {
    replica_->run({"REPLICAOF", "127.0.0.1", std::to_string(port)});
    replica_master_port_ = port;
  }
  // The source replica's link to the master it was last pointed at is `state`.
  bool link_is(const std::string& state) {
    return eventually(
        [&] {
          return replica_->fresh_info_field("replication", "master_link_status") == state &&
                 replica_->fresh_info_field("replication", "master_port") ==
                     std::to_string(replica_master_port_);
        },
        30s, kPoll);
  }

  uint64_t master_stat(const std::string& field) {
    return std::stoull(master_->fresh_info_field("stats", field));
  }

  // `target` holds what `source` holds (DEBUG DIGEST); on failure, says
  // what still differs.
  static bool converged(RedisProcess& source, RedisProcess& target) {
    std::string why;
    const bool ok = eventually(
        [&] {
          const std::string want = digest_of(source), got = digest_of(target);
          if (want == got) return true;
          std::ostringstream os;
          os << "source digest " << want << " keyspace " << source.keyspace() << "; target digest "
             << got << " keyspace " << target.keyspace();
          why = os.str();
          return false;
        },
        kConvergeWithin, kPoll);
    if (!ok) ADD_FAILURE() << "the target did not converge: " << why;
    return ok;
  }

  // rdma-client --follow --mode restore into `target`, in the background.
  static Process start_follower(uint16_t server_port, RedisProcess& target) {
    return Process({client_binary(), sidecar_host(), std::to_string(server_port), "--redis",
                    target.address(), "--follow", "--mode", "restore", "--status-interval", "1",
                    "--transport", test_transport(), "--quiet"});
  }

  void wait_rounds(WriteLoad& writer, uint64_t more) {
    const uint64_t until = writer.rounds() + more;
    while (writer.rounds() < until) std::this_thread::sleep_for(10ms);
  }

  TestServer server_;
  std::optional<RedisProcess> master_, replica_;
  uint16_t replica_master_port_ = 0;
};

// The case: three clients one after another under writes, each
// ending a replica of the master by a partial resync; the master never forks.
TEST_P(ReplicaSourceTest, HandoffsToTheMasterNeverMakeItFork) {
  WriteLoad writer(*master_);
  wait_rounds(writer, 30);
  // The replica's own full sync (SetUp) was the master's last fork.
  const uint64_t forks = master_stat("total_forks");
  const uint64_t full = master_stat("sync_full"), partial = master_stat("sync_partial_ok");
  const std::string replica_forks = replica_->info_field("stats", "total_forks");

  SidecarServer server(replica_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const Fields& ready = server.ready_fields();
  EXPECT_EQ(ready.at("source_role"), "replica") << server.ready_line();
  EXPECT_EQ(ready.at("source_master"), master_->address()) << server.ready_line();
  EXPECT_EQ(ready.at("replid"), master_->info_field("replication", "master_replid"));
  const uint64_t table_offset = field_u64(ready, "offset").value_or(UINT64_MAX);

  std::vector<std::unique_ptr<RedisProcess>> targets;
  for (int i = 0; i < 3; ++i) {
    wait_rounds(writer, 20);  // each client catches up from further along the log
    auto& target = targets.emplace_back(new_target());
    ASSERT_TRUE(target->started()) << target->start_error();
    ClientRun run = sync_to(server.port(), *target,
                            {"--mode", "replica", "--handoff", "--master", master_->address()});
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    const std::string handoff = line_starting(run.out, "handoff ");
    EXPECT_EQ(parse_fields(handoff)["partial_resync"], "yes") << run.describe();
    // It caught up from the change log, past the table, before handing off.
    EXPECT_GT(field_u64(parse_fields(handoff), "offset").value_or(0), table_offset)
        << handoff << "\n"
        << server.describe() << "\n"
        << replica_->log();
  }
  writer.stop();
  EXPECT_EQ(writer.errors(), "");
  for (auto& target : targets) {
    EXPECT_EQ(target->info_field("replication", "master_port"), std::to_string(master_->port()));
    EXPECT_TRUE(converged(*master_, *target));
  }
  EXPECT_EQ(master_stat("sync_partial_ok"), partial + 3);
  EXPECT_EQ(master_stat("sync_full"), full);
  EXPECT_EQ(master_stat("total_forks"), forks) << "the master forked for a sync";
  // The replica forked once, for the sidecar's one epoch.
  EXPECT_EQ(std::stoull(replica_->info_field("stats", "total_forks")),
            std::stoull(replica_forks) + 1);
}

TEST_P(ReplicaSourceTest, RestoreModeFollowerKeepsUpWithTheWriter) {
  WriteLoad writer(*master_);
  wait_rounds(writer, 30);
  const uint64_t forks = master_stat("total_forks");
  SidecarServer server(replica_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  RedisProcess target(options());
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(server.port(), target);
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  wait_rounds(writer, 100);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");
  EXPECT_TRUE(converged(*master_, target)) << follower.describe();
  EXPECT_FALSE(std::regex_search(follower.stdout_text(), std::regex("resyncs=[1-9]")))
      << follower.describe();
  EXPECT_EQ(master_stat("total_forks"), forks) << "the master forked for a sync";
  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
}

// A master's stream after a full sync begins with a SELECT; a replica passes
// its master's stream on as it is, so after the replica's RDB the stream
// goes on in whatever DB the master had selected (the RDB's repl-stream-db,
// which the table carries): both modes must start there.
TEST_P(ReplicaSourceTest, StreamGoesOnInTheDbTheMasterHadSelected) {
  master_->run({"SELECT", "3"});
  master_->run({"SET", "before", "1"});
  ASSERT_TRUE(eventually([&] { return replica_->client().total_keys() == 1; }, 30s, kPoll));
  SidecarServer server(replica_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess restored(options());
  ASSERT_TRUE(restored.started()) << restored.start_error();
  Process follower = start_follower(server.port(), restored);
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();

  master_->run({"SET", "after", "2"});  // still DB 3: the master sends no SELECT
  EXPECT_TRUE(converged(*master_, restored)) << follower.describe();
  auto target = new_target();
  ASSERT_TRUE(target->started()) << target->start_error();
  ClientRun run = sync_to(server.port(), *target,
                          {"--mode", "replica", "--handoff", "--master", master_->address()});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(converged(*master_, *target)) << run.describe();
}

TEST_P(ReplicaSourceTest, ReadyLineNamesAMasterSource) {
  SidecarServer server(master_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("source_role"), "master") << server.ready_line();
  EXPECT_EQ(server.ready_fields().count("source_master"), 0u) << server.ready_line();
}

// A user with a replica's rights but no +info: the role is unknown ("-"),
// said at info level, and the snapshot is taken all the same.
TEST_P(ReplicaSourceTest, UserWithoutInfoStillSnapshotsTheReplica) {
  fill_strings(*master_, 0, "k:", 100);
  ASSERT_TRUE(eventually([&] { return replica_->client().total_keys() == 100; }, 30s, kPoll));
  replica_->run(
      {"ACL", "SETUSER", "sidecar", "on", ">side-pw", "-@all", "+psync", "+replconf", "+ping"});
  SidecarServer server(replica_->address(), {}, {{"RDMA_SERVER_REDIS_AUTH", "sidecar side-pw"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("source_role"), "-") << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("records"), "100") << server.ready_line();
  EXPECT_NE(server.process().stderr_text().find("give the sidecar's user +info"), std::string::npos)
      << server.describe();
}

// At start: exit 3 naming the replica, its master, the link, and the fix.
TEST_P(ReplicaSourceTest, ReplicaWithoutItsMasterIsRefused) {
  const uint16_t dead = closed_loopback_port();
  point_replica_at(dead);
  ASSERT_TRUE(link_is("down"));
  SidecarServer server(replica_->address());
  EXPECT_EQ(server.process().wait(30s), exit_code::kUnavailable) << server.describe();
  const std::string err = server.process().stderr_text();
  for (const std::string& said :
       {replica_->address(), "replica of 127.0.0.1:" + std::to_string(dead),
        std::string("master_link_status:down"), std::string("point --redis at the master")})
    EXPECT_NE(err.find(said), std::string::npos) << said << "\n" << server.describe();
}

// After the first table: a new snapshot (SIGUSR1) is not taken while the
// replica's link is down; the sidecar says why, keeps serving, asks again
// with backoff, and publishes once the link is back (the same history, so
// the follower goes on).
TEST_P(ReplicaSourceTest, LinkDownAfterTheFirstTableIsWaitedFor) {
  fill_strings(*master_, 0, "before:", 100);
  SidecarServer server(replica_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target(options());
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(server.port(), target);
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();

  point_replica_at(closed_loopback_port());
  ASSERT_TRUE(link_is("down"));
  server.process().signal(SIGUSR1);
  EXPECT_TRUE(
      server.process().wait_for_line("master_link_status:down", 30s, Process::Stream::kStderr))
      << server.describe();
  EXPECT_TRUE(server.process().running()) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("published "), std::string::npos)
      << server.describe();

  point_replica_at(master_->port());
  ASSERT_TRUE(link_is("up")) << replica_->log();
  auto published = server.process().wait_for_line("published ", 60s);
  ASSERT_TRUE(published) << server.describe();
  EXPECT_EQ(parse_fields(*published).at("source_role"), "replica") << *published;
  fill_strings(*master_, 0, "after:", 100);
  EXPECT_TRUE(converged(*master_, target)) << follower.describe() << "\n" << server.describe();
  EXPECT_FALSE(std::regex_search(follower.stdout_text(), std::regex("resyncs=[1-9]")))
      << follower.describe();
}

// REPLICAOF NO ONE on the source while a follower runs: the replica goes on
// under a new replication ID (psync2's +CONTINUE <new id>), a history the
// table and log do not carry. The sidecar takes the new history's RDB and
// publishes it; the follower resyncs from it and follows the promoted one.
TEST_P(ReplicaSourceTest, PromotedSourceBecomesANewHistory) {
  fill_strings(*master_, 0, "before:", 200);
  SidecarServer server(replica_->address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target(options());
  ASSERT_TRUE(target.started()) << target.start_error();
  Process follower = start_follower(server.port(), target);
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  ASSERT_TRUE(converged(*master_, target));

  replica_->run({"REPLICAOF", "NO", "ONE"});
  const std::string new_replid = replica_->info_field("replication", "master_replid");
  ASSERT_NE(new_replid, server.ready_fields().at("replid"));
  auto published = server.process().wait_for_line("published ", 60s);
  ASSERT_TRUE(published) << server.describe();
  const Fields p = parse_fields(*published);
  EXPECT_EQ(p.at("replid"), new_replid) << *published;
  EXPECT_EQ(p.at("source_role"), "master") << *published;

  fill_strings(*replica_, 0, "promoted:", 100);
  EXPECT_TRUE(converged(*replica_, target)) << follower.describe() << "\n" << server.describe();
  // The follower's log was superseded: it reloaded the new table.
  EXPECT_TRUE(follower.wait_for_line("resyncs=1", 30s)) << follower.describe();
  EXPECT_TRUE(server.process().running()) << server.describe();
}

// Debian 12's Redis and the newest server tests/servers.sh installs.
INSTANTIATE_TEST_SUITE_P(Servers, ReplicaSourceTest, ::testing::Values("redis-7.0", "valkey-9.1"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace rrs::test
