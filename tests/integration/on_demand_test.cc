// Snapshots on demand (--source psync, rdma-server's default): no fork of
// the master until a client needs a table; one fork for the clients that ask
// within the gathering delay; none for a client the published table fits; a
// new one once the change log has moved past the table; a client that
// arrives before the table waits for it, past its --connect-timeout; a
// snapshot that fails tells the waiting client why.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/write_load.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

class OnDemandTest : public MasterTest {
 protected:
  uint64_t forks() { return std::stoull(master_.fresh_info_field("stats", "total_forks")); }

  // rdma-server beside master_, first snapshot on demand.
  SidecarServer on_demand(std::vector<std::string> extra) {
    extra.insert(extra.begin(), {"--source", "psync"});
    return SidecarServer(master_.address(), std::move(extra), {}, FirstSnapshot::kOnDemand);
  }

  // A fresh target loaded from the sidecar, compared with the master.
  void expect_sync_equals_master(uint16_t port, std::vector<std::string> extra = {}) {
    RedisProcess target;
    ASSERT_TRUE(target.started()) << target.start_error();
    ClientRun run = sync_to(port, target, std::move(extra));
    EXPECT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_EQ(target.digest(), master_.digest()) << run.describe();
  }

  static size_t published(SidecarServer& server) {
    const std::string out = server.process().stdout_text();
    size_t n = 0;
    for (size_t at = out.find("published "); at != std::string::npos;
         at = out.find("published ", at + 1))
      ++n;
    return n;
  }

  // The process's resident memory, from /proc.
  static uint64_t rss_bytes(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
  }
};

TEST_F(OnDemandTest, NoForkUntilAClientAsksAndNoneForOneTheTableFits) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  const uint64_t before = forks();
  SidecarServer server = on_demand({"--snapshot-delay", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("table"), "none") << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("snapshot"), "on-demand") << server.ready_line();
  // Writes, and time: nothing asks the master for a snapshot.
  fill_strings(master_, 0, "quiet:", 500);
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(forks(), before) << server.describe();
  EXPECT_EQ(master_.info_field("replication", "connected_slaves"), "0");

  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 1) << server.describe();
  EXPECT_EQ(published(server), 1u) << server.describe();
  // The sidecar is the master's replica from then on (the change log runs).
  EXPECT_EQ(master_.info_field("replication", "connected_slaves"), "1");

  // The next client starts from the same table: no fork.
  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 1) << server.describe();
  EXPECT_EQ(published(server), 1u) << server.describe();
}

TEST_F(OnDemandTest, ClientsInsideTheGatheringDelayShareOneFork) {
  fill_strings(master_, 0, "k:", 2000, 100);
  const uint64_t before = forks();
  SidecarServer server = on_demand({"--snapshot-delay", "2"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess a, b;
  ASSERT_TRUE(a.started()) << a.start_error();
  ASSERT_TRUE(b.started()) << b.start_error();
  auto first = std::async(std::launch::async, [&] { return sync_to(server.port(), a); });
  std::this_thread::sleep_for(500ms);
  auto second = std::async(std::launch::async, [&] {
    return sync_to(server.port(), b, {"--mode", "replica"});
  });
  ClientRun ra = first.get(), rb = second.get();
  EXPECT_EQ(ra.exit_code, 0) << ra.describe();
  EXPECT_EQ(rb.exit_code, 0) << rb.describe();
  EXPECT_EQ(a.digest(), master_.digest());
  EXPECT_EQ(b.digest(), master_.digest());
  EXPECT_EQ(forks(), before + 1) << server.describe();
  EXPECT_EQ(published(server), 1u) << server.describe();
  // The first client waited for the delay and the snapshot: it was told so.
  EXPECT_NE(server.process().stderr_text().find("--snapshot-delay"), std::string::npos)
      << server.describe();
}

// A client that arrives long before the table waits for it, beyond its
// --connect-timeout: the server says it is taking a snapshot.
TEST_F(OnDemandTest, AClientWaitsForASlowSnapshotPastItsConnectTimeout) {
  fill_strings(master_, 0, "slow:", 4000, 20);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});  // ~4 s of RDB
  SidecarServer server = on_demand({"--snapshot-delay", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_to(server.port(), target, {"--connect-timeout", "2"});
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_GT(run.elapsed, 3s) << run.describe();
  EXPECT_NE(run.err.find("waiting for rdma-server's snapshot"), std::string::npos)
      << run.describe();
  EXPECT_EQ(target.digest(), master_.digest());
}

// Once the change log no longer holds the stream from the table's offset, a
// new client could not follow from that table: it gets a new one (one more
// fork), continued by the same log.
TEST_F(OnDemandTest, ANewSnapshotOnceTheLogHasMovedPastTheTable) {
  fill_strings(master_, 0, "k:", 1000, 100);
  SidecarServer server = on_demand({"--snapshot-delay", "0", "--log-size", "64k"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const uint64_t before = forks();
  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 1);
  // Well past the 64 KiB ring.
  fill_strings(master_, 0, "later:", 400, 1000);
  const std::string want = master_.info_field("replication", "master_repl_offset");
  ASSERT_TRUE(eventually(
      [&] {
        return master_.fresh_info_field("replication", "slave0").find("offset=" + want + ",") !=
               std::string::npos;
      },
      30s, 100ms))
      << master_.info_field("replication", "slave0") << " want " << want;
  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 2) << server.describe();
  EXPECT_EQ(published(server), 2u) << server.describe();
  EXPECT_NE(server.process().stderr_text().find("the change log has moved past epoch"),
            std::string::npos)
      << server.describe();
}

TEST_F(OnDemandTest, SigusrTakesTheFirstSnapshotWithoutAClient) {
  fill_strings(master_, 0, "k:", 100);
  const uint64_t before = forks();
  SidecarServer server = on_demand({});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  server.process().signal(SIGUSR1);
  ASSERT_TRUE(server.process().wait_for_line("published ", 60s)) << server.describe();
  EXPECT_EQ(forks(), before + 1);
  // Clients start from it at once: no gathering delay, no fork.
  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 1) << server.describe();
}

// The master is checked at start even though no snapshot is taken then. One
// not up yet (a pod's containers start together) is waited for: the sidecar
// serves, not ready, and is ready once the master answers.
TEST_F(OnDemandTest, AMasterNotUpYetIsWaitedForNotReady) {
  ReservedPort master_port;  // refused until the master starts on it
  const uint16_t metrics_port = free_loopback_port();
  SidecarServer server("127.0.0.1:" + std::to_string(master_port.port()),
                       {"--metrics", std::to_string(metrics_port)}, {}, FirstSnapshot::kOnDemand);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_NE(server.process().stderr_text().find("check the master before serving"),
            std::string::npos)
      << server.describe();
  HttpReply r = http_get(metrics_port, "/readyz");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("the master is out of reach"), std::string::npos) << r.body;

  RedisOptions later;
  later.port = master_port.release();
  RedisProcess master(later);
  ASSERT_TRUE(master.started()) << master.start_error();
  EXPECT_TRUE(
      eventually([&] { return (r = http_get(metrics_port, "/readyz")).status == 200; }, 30s, 100ms))
      << r.body << server.describe();
  EXPECT_TRUE(server.process().running()) << server.describe();
}

// A master gone by the time a client asks: the client is told why the
// snapshot failed and gives up at its --connect-timeout (exit 3), rather
// than wait on.
TEST_F(OnDemandTest, ASnapshotThatFailsTellsTheClientWhy) {
  SidecarServer server = on_demand({"--snapshot-delay", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  master_.kill();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_to(server.port(), target, {"--connect-timeout", "5"});
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_NE(run.err.find("the snapshot asked for failed"), std::string::npos) << run.describe();
  EXPECT_LT(run.elapsed, 30s) << run.describe();
}

// The whole way a user runs it: replica mode with --handoff from a table
// taken for this client, under writes.
TEST_F(OnDemandTest, HandoffFromATableTakenOnDemand) {
  WriteLoad writer(master_);
  while (writer.rounds() < 30) std::this_thread::sleep_for(10ms);
  SidecarServer server = on_demand({"--snapshot-delay", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_to(server.port(), target,
                          {"--mode", "replica", "--handoff", "--master", master_.address()});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.out.find("partial_resync=yes"), std::string::npos) << run.describe();
  writer.stop();
  EXPECT_EQ(writer.errors(), "");
  EXPECT_TRUE(eventually(
      [&] {
        return target.digest() == master_.digest() &&
               target.info_field("replication", "master_repl_offset") ==
                   master_.info_field("replication", "master_repl_offset");
      },
      30s, 100ms))
      << run.describe();
}

// --table-retain: a table no client reads is given back (the memory goes),
// while a follower goes on reading the change log; the next client that
// needs a table gets a new snapshot.
TEST_F(OnDemandTest, AnUnreadTableIsGivenBackWhileTheLogGoesOn) {
  fill_strings(master_, 0, "big:", 3000, 10000);  // a 30 MB table
  // Over verbs the follower (log-only) does not keep the table's epoch
  // registered: it reconnects at once and finds the same log.
  SidecarServer server = on_demand({"--snapshot-delay", "0", "--table-retain", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const uint64_t before = forks();
  RedisProcess follower;
  ASSERT_TRUE(follower.started()) << follower.start_error();
  Process client({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                  follower.address(), "--transport", test_transport(), "--follow", "--mode",
                  "restore", "--status-interval", "1"});
  ASSERT_TRUE(client.wait_for_line("following", 60s)) << client.describe();
  const uint64_t held = rss_bytes(server.process().pid());
  // The follower reads only the log now: after the 5 s floor, the table goes.
  auto released = server.process().wait_for_line("released epoch=", 30s);
  ASSERT_TRUE(released) << server.describe();
  EXPECT_GE(field_u64(parse_fields(*released), "bytes").value_or(0), 30000000u) << *released;
#ifndef __SANITIZE_ADDRESS__  // ASan's quarantine grows meanwhile and hides the drop
  EXPECT_TRUE(eventually([&] { return rss_bytes(server.process().pid()) + (25u << 20) < held; },
                         10s, 200ms))
      << "RSS " << rss_bytes(server.process().pid()) << " held " << held;
#else
  (void)held;
#endif
  // The follower carries on from the log.
  master_.run({"SET", "after", "the table went"});
  EXPECT_TRUE(eventually([&] { return follower.digest() == master_.digest(); }, 30s, 100ms))
      << client.describe();
  EXPECT_EQ(forks(), before + 1);
  // A new client needs a table: a new snapshot, continued by the same log.
  expect_sync_equals_master(server.port());
  EXPECT_EQ(forks(), before + 2) << server.describe();
  client.terminate();
}

// A client still reading when the retention time passes keeps its table
// until it is done (here: stopped mid-read with SIGSTOP for longer than the
// retention).
TEST_F(OnDemandTest, ATableBeingReadIsKeptPastTheRetention) {
  fill_strings(master_, 0, "big:", 2000, 10000);
  SidecarServer server = on_demand({"--snapshot-delay", "0", "--table-retain", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  Process client({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                  target.address(), "--transport", test_transport(), "--chunk-size", "65536",
                  "--in-flight", "1"});
  ASSERT_TRUE(client.wait_for_line("table epoch", 60s, Process::Stream::kStderr))
      << client.describe();
  client.signal(SIGSTOP);
  std::this_thread::sleep_for(9s);  // well past the 5 s floor of --table-retain 0
  EXPECT_EQ(server.process().stdout_text().find("released"), std::string::npos)
      << server.describe();
  client.signal(SIGCONT);
  EXPECT_EQ(client.wait(60s), 0) << client.describe();
  EXPECT_EQ(target.digest(), master_.digest());
  // Done: now it goes.
  EXPECT_TRUE(server.process().wait_for_line("released epoch=", 30s)) << server.describe();
}

}  // namespace
}  // namespace rrs::test
