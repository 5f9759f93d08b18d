// rdma-client --mode replica against real servers: the target becomes a
// replica of the client, which streams it the table as an RDB and, with
// --follow, the master's stream verbatim; --handoff then points it at the
// real master, which continues it with a partial resync. Every type arrives
// intact, the target's replication ID and offset are the master's, a backlog
// that no longer reaches refuses the handoff without touching the target,
// and a non-empty or disk-loading target is handled as documented.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <regex>
#include <sstream>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_client.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/write_load.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

// How long a target may take to catch up once the writer stops.
constexpr auto kConvergeWithin = 20s;
// How often eventually() asks (DEBUG DIGEST of both sides, INFO).
constexpr auto kPoll = 100ms;

struct SyncCounters {
  std::string full, partial_ok;
};
SyncCounters sync_counters(RedisProcess& master) {
  return {master.info_field("stats", "sync_full"), master.info_field("stats", "sync_partial_ok")};
}

class ReplicaModeTest : public MasterTest {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(target_.started()) << target_.start_error();
  }

  // rdma-client --mode replica into `target`, run in the background.
  static Process start_client(uint16_t server_port, RedisProcess& target,
                              std::vector<std::string> extra) {
    std::vector<std::string> argv = {client_binary(), sidecar_host(),   std::to_string(server_port),
                                     "--redis",       target.address(), "--mode",
                                     "replica",       "--transport",    test_transport(),
                                     "--quiet"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Process(argv);
  }

  // Waits until the target holds the master's data (DEBUG DIGEST) at the
  // master's replication offset; on failure, records what still differs.
  bool converged(RedisProcess& master, RedisProcess& target) {
    std::string why;
    bool ok = eventually(
        [&] {
          const std::string want_offset = master.info_field("replication", "master_repl_offset");
          const std::string want_digest = master.digest();
          const std::string got_offset = target.info_field("replication", "master_repl_offset");
          const std::string got_digest = target.digest();
          if (want_offset == got_offset && want_digest == got_digest) return true;
          std::ostringstream os;
          os << "master offset " << want_offset << " digest " << want_digest << " keyspace "
             << master.keyspace() << "; target offset " << got_offset << " digest " << got_digest
             << " keyspace " << target.keyspace();
          why = os.str();
          return false;
        },
        kConvergeWithin, kPoll);
    if (!ok) ADD_FAILURE() << "the target did not converge: " << why;
    return ok;
  }

  // Loads the RDB straight from the link (Redis 7.0's default, disabled,
  // writes it to disk first: DiskLoadingTargetSyncsWithAWarning).
  RedisProcess target_{RedisOptions().with_args({"--repl-diskless-load", "swapdb"})};
};

TEST_F(ReplicaModeTest, EveryTypeThroughTheReplicaProtocol) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  const Keyspace want = master_.keyspace();
  ASSERT_GE(want.size(), 4u) << want;  // several DBs

  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const Fields& ready = server.ready_fields();

  ClientRun run = sync_to(server.port(), target_, {"--mode", "replica"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  ASSERT_TRUE(run.has_summary) << run.describe();
  EXPECT_EQ(run.summary["mode"], "replica") << run.describe();
  EXPECT_EQ(run.count("keys"), total_keys(want)) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(run.summary["offset"], ready.at("offset")) << run.describe() << server.ready_line();
  EXPECT_GT(run.count("rdb_bytes").value_or(0), 9u << 20) << run.describe();
  EXPECT_EQ(run.err.find("write the RDB to disk"), std::string::npos) << run.describe();
  for (const auto& [db, counts] : want)
    EXPECT_NE(run.summary["dbs"].find(std::to_string(db) + ":" + std::to_string(counts.keys)),
              std::string::npos)
        << "db " << db << "\n"
        << run.describe();

  EXPECT_EQ(target_.digest(), master_.digest());
  EXPECT_EQ(target_.keyspace(), want);
  EXPECT_EQ(target_.client().functions(), master_.client().functions());
  // Exact expiries, stream groups and consumers, functions.
  EXPECT_EQ(target_.client().state_outside_digest(), master_.client().state_outside_digest());

  // The target holds the master's history at the table's offset, as a
  // replica whose master (the client) is gone.
  EXPECT_EQ(target_.info_field("replication", "role"), "slave");
  EXPECT_EQ(target_.info_field("replication", "master_replid"),
            master_.info_field("replication", "master_replid"));
  EXPECT_EQ(target_.info_field("replication", "master_replid"), ready.at("replid"));
  EXPECT_EQ(target_.info_field("replication", "master_repl_offset"), ready.at("offset"));
  EXPECT_TRUE(
      eventually([&] { return target_.info_field("replication", "master_link_status") == "down"; },
                 5s, kPoll));
}

TEST_F(ReplicaModeTest, FollowForwardsTheStreamByteForByte) {
  WriteLoad writer(master_);
  while (writer.rounds() < 30) std::this_thread::sleep_for(10ms);  // a dataset to snapshot
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  Process follower = start_client(server.port(), target_, {"--follow", "--status-interval", "1"});
  auto synced = follower.wait_for_line("synced", 60s);
  ASSERT_TRUE(synced) << follower.describe();
  EXPECT_EQ(parse_fields(*synced)["mode"], "replica") << *synced;
  ASSERT_TRUE(follower.wait_for_line("following", 30s)) << follower.describe();
  const uint64_t before = writer.rounds();
  while (writer.rounds() < before + 150) std::this_thread::sleep_for(10ms);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");

  // The target's replication offset is the master's, exactly: every byte of
  // the stream went down the link, nothing else did.
  EXPECT_TRUE(converged(master_, target_)) << follower.describe();
  EXPECT_EQ(target_.client().functions(), master_.client().functions());
  EXPECT_EQ(target_.info_field("replication", "master_replid"),
            master_.info_field("replication", "master_replid"));
  EXPECT_EQ(target_.info_field("replication", "master_link_status"), "up");
  // The follower's latest status line reports the master's offset with no
  // lag. Read the master's offset afresh each time: it moves by itself (a
  // 14-byte PING to its replicas every 10 s), possibly between two lines.
  std::string want;
  EXPECT_TRUE(eventually(
      [&] {
        want = " offset=" + master_.info_field("replication", "master_repl_offset") +
               " lag_bytes=0 lag_ms=0";
        const std::string out = follower.stdout_text();
        const size_t last = out.rfind("following ");
        return last != std::string::npos &&
               out.substr(last, out.find('\n', last) - last).find(want) != std::string::npos;
      },
      10s, kPoll))
      << want << "\n"
      << follower.describe();
  EXPECT_NE(follower.stdout_text().find(" acked="), std::string::npos) << follower.describe();
  EXPECT_FALSE(std::regex_search(follower.stdout_text(), std::regex("resyncs=[1-9]")))
      << follower.describe();

  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
  EXPECT_NE(follower.stdout_text().find("stopped offset="), std::string::npos)
      << follower.describe();
}

// A stream byte flipped in the change log after its block was sealed
// (RRS_TEST_CORRUPT_LOG): the block is never forwarded. The client exits 4
// naming its offsets, and the target's replication offset stops before it.
TEST_F(ReplicaModeTest, CorruptLogIsNeverForwarded) {
  master_.run({"SET", "before", "the snapshot"});
  SidecarServer server(master_.address(), {"--source", "psync"},
                       {{"RRS_TEST_CORRUPT_LOG", "3000"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  Process follower = start_client(server.port(), target_, {"--follow", "--status-interval", "1"});
  auto synced = follower.wait_for_line("synced", 60s);
  ASSERT_TRUE(synced) << follower.describe();
  const uint64_t table_offset = std::stoull(parse_fields(*synced)["offset"]);
  ASSERT_TRUE(follower.wait_for_line("following", 30s)) << follower.describe();
  const std::string value(90, 'v');
  for (int i = 0; i < 200; ++i) master_.run({"SET", "c:" + std::to_string(i), value});

  EXPECT_EQ(follower.wait(60s), exit_code::kBadData) << follower.describe();
  EXPECT_NE(follower.stderr_text().find("do not match their checksum"), std::string::npos)
      << follower.describe();
  const uint64_t target_offset = std::stoull(
      target_.info_field("replication", "master_repl_offset"));
  EXPECT_LE(target_offset, table_offset + 3000) << follower.describe();
  for (int i = 0; i < 200; ++i) {
    Reply got = target_.command({"GET", "c:" + std::to_string(i)});
    ASSERT_TRUE(got);
    if (got->type == REDIS_REPLY_NIL) continue;
    EXPECT_EQ(text(got), value) << "c:" << i;
  }
}

TEST_F(ReplicaModeTest, HandoffContinuesWithAPartialResync) {
  WriteLoad writer(master_);
  while (writer.rounds() < 30) std::this_thread::sleep_for(10ms);
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  // The sidecar's own full sync is counted by now.
  const SyncCounters before = sync_counters(master_);
  // Far more stream past the table than the handoff's slack (64 KiB), so the
  // client must catch up from the change log first. (A loaded TCG guest's
  // writer made 100 KB in 30 s: the wait is long.)
  const uint64_t table_offset = field_u64(server.ready_fields(), "offset").value_or(0);
  ASSERT_TRUE(eventually(
      [&] {
        return std::stoull(master_.info_field("replication", "master_repl_offset")) >
               table_offset + (256 << 10);
      },
      120s, kPoll))
      << master_.info_field("replication", "master_repl_offset") << "\n"
      << server.ready_line();

  Process client = start_client(server.port(), target_,
                                {"--handoff", "--master", master_.address()});
  ASSERT_EQ(client.wait(90s), 0) << client.describe();  // the writer never stopped
  auto line = client.wait_for_line("handoff ", 1s);
  ASSERT_TRUE(line) << client.describe();
  Fields f = parse_fields(*line);
  EXPECT_EQ(f["master"], master_.address()) << *line;
  EXPECT_EQ(f["partial_resync"], "yes") << *line;
  EXPECT_EQ(f["sync_partial_ok"], "+1") << *line;
  EXPECT_EQ(f["sync_full"], "+0") << *line;
  // Judged by the target's own backlog, not the master's counters alone.
  EXPECT_EQ(client.stderr_text().find("cannot tell"), std::string::npos) << client.describe();
  // It followed the log well past the table, to within the slack of its
  // end, before handing off where the target had got to.
  EXPECT_GT(field_u64(f, "offset").value_or(0), table_offset + (192 << 10)) << *line << "\n"
                                                                            << server.ready_line();
  auto caught_up = client.wait_for_line("caught_up ", 1s);
  ASSERT_TRUE(caught_up) << client.describe();
  Fields c = parse_fields(*caught_up);
  // The handoff continues from the target's last whole command: the
  // forwarded bytes may end inside the next one, which the master resends.
  EXPECT_LE(field_u64(f, "offset").value_or(UINT64_MAX), field_u64(c, "offset").value_or(0))
      << *caught_up << "\n"
      << *line;
  EXPECT_LT(field_u64(c, "offset").value_or(0) - field_u64(f, "offset").value_or(0), 64u << 10)
      << *caught_up << "\n"
      << *line;
  EXPECT_LE(field_u64(c, "lag_bytes").value_or(UINT64_MAX), 64u << 10) << *caught_up;

  const SyncCounters after = sync_counters(master_);
  EXPECT_EQ(std::stoull(after.partial_ok), std::stoull(before.partial_ok) + 1);
  EXPECT_EQ(after.full, before.full);

  // Writes go on after the handoff, now straight from the master.
  const uint64_t rounds = writer.rounds();
  while (writer.rounds() < rounds + 50) std::this_thread::sleep_for(10ms);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");
  EXPECT_EQ(target_.info_field("replication", "role"), "slave");
  EXPECT_EQ(target_.info_field("replication", "master_port"), std::to_string(master_.port()));
  EXPECT_EQ(target_.info_field("replication", "master_link_status"), "up");
  EXPECT_EQ(target_.info_field("replication", "master_replid"),
            master_.info_field("replication", "master_replid"));
  EXPECT_TRUE(converged(master_, target_)) << client.describe();
  EXPECT_EQ(target_.client().functions(), master_.client().functions());
  EXPECT_EQ(sync_counters(master_).full, before.full) << "nothing did a full sync meanwhile";
}

TEST_F(ReplicaModeTest, HandoffRefusedWhenTheBacklogNoLongerReaches) {
  RedisProcess master(RedisOptions().with_args({"--repl-backlog-size", "16384"}));
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_strings(master, 0, "k:", 100);
  // No change log: the handoff comes right after the sync, at the table's offset.
  SidecarServer server(master.address(), {"--source", "psync", "--log-size", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const std::string snapshot = master.digest();
  const uint64_t offset = field_u64(server.ready_fields(), "offset").value_or(0);
  // Far more than the 16 KiB backlog holds, until the master has really
  // dropped the byte after the table's offset: Redis 7 keeps the backlog's
  // blocks while a replica still has them to send, and after a diskless sync
  // it starts the sidecar's stream only at its next REPLCONF ACK (once a
  // second), so the backlog may stay whole for a second.
  fill_strings(master, 0, "later:", 100, 1024);
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  for (int i = 0; std::stoull(master.info_field("replication", "repl_backlog_first_byte_offset")) <=
                  offset + 1;) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << text(master.command({"INFO", "replication"}));
    for (int n = 0; n < 16; ++n, ++i)
      master.run({"SET", "more:" + std::to_string(i % 500), std::string(1024, 'm')});
    std::this_thread::sleep_for(20ms);
  }
  const SyncCounters before = sync_counters(master);

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--handoff", "--master", master.address()});
  EXPECT_EQ(run.exit_code, exit_code::kRefused) << run.describe();
  EXPECT_TRUE(run.has_summary) << run.describe();  // the sync itself went through
  EXPECT_NE(run.err.find("repl-backlog-size"), std::string::npos) << run.describe();
  EXPECT_EQ(run.out.find("handoff "), std::string::npos) << run.describe();

  // The master was not asked for anything; the target still holds the
  // table's data, a replica of the (gone) client, not of the master.
  const SyncCounters after = sync_counters(master);
  EXPECT_EQ(after.full, before.full);
  EXPECT_EQ(after.partial_ok, before.partial_ok);
  EXPECT_EQ(master.info_field("replication", "connected_slaves"), "1");  // the sidecar
  EXPECT_EQ(target_.info_field("replication", "role"), "slave");
  EXPECT_NE(target_.info_field("replication", "master_port"), std::to_string(master.port()));
  EXPECT_TRUE(
      eventually([&] { return target_.info_field("replication", "master_link_status") == "down"; },
                 5s, kPoll));
  EXPECT_EQ(target_.digest(), snapshot);
}

TEST_F(ReplicaModeTest, NonEmptyTargetRefusedUnlessFlush) {
  fill_strings(master_, 0, "k:", 200);
  fill_strings(master_, 3, "k3:", 20, 5000);
  target_.run({"SET", "mine", "only on the target"});
  target_.client().select(7);
  target_.run({"SET", "mine7", "only on the target, DB 7"});
  target_.client().select(0);
  const std::string before = target_.digest();
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun refused = sync_to(server.port(), target_, {"--mode", "replica"});
  EXPECT_EQ(refused.exit_code, exit_code::kRefused) << refused.describe();
  EXPECT_NE(refused.err.find("--flush"), std::string::npos) << refused.describe();
  EXPECT_EQ(target_.digest(), before) << "a refused run must not touch the target";
  EXPECT_EQ(target_.info_field("replication", "role"), "master")
      << "a refused run must not touch the target";

  ClientRun flushed = sync_to(server.port(), target_, {"--mode", "replica", "--flush"});
  EXPECT_EQ(flushed.exit_code, 0) << flushed.describe();
  EXPECT_EQ(target_.digest(), master_.digest());
  EXPECT_EQ(target_.keyspace(), master_.keyspace());
  EXPECT_EQ(target_.info_field("replication", "master_replid"),
            master_.info_field("replication", "master_replid"));
}

TEST_F(ReplicaModeTest, DiskLoadingTargetSyncsWithAWarning) {
  RedisProcess target(RedisOptions().with_args({"--repl-diskless-load", "disabled"}));
  ASSERT_TRUE(target.started()) << target.start_error();
  fill_strings(master_, 0, "k:", 300, 100);
  fill_strings(master_, 2, "big:", 5, size_t{200} * 1024);
  master_.run({"HSET", "h", "f", "v"});
  master_.run({"PEXPIRE", "h", "86400000"});
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target, {"--mode", "replica"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.err.find("write the RDB to disk"), std::string::npos) << run.describe();
  EXPECT_EQ(target.digest(), master_.digest());
  EXPECT_EQ(target.keyspace(), master_.keyspace());
  EXPECT_EQ(target.client().state_outside_digest(), master_.client().state_outside_digest());
  EXPECT_EQ(target.info_field("replication", "master_repl_offset"),
            server.ready_fields().at("offset"));
}

// Another local process on the replica link, asking for a full sync as a
// replica that never synced does ("PSYNC ? -1", then an ACK of everything):
// returns what it read until the link dropped it.
std::string psync_anything(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
    const std::string out = resp_command({"PING"}) +
                            resp_command({"REPLCONF", "capa", "eof", "capa", "psync2"}) +
                            resp_command({"PSYNC", "?", "-1"}) +
                            resp_command({"REPLCONF", "ACK", "999999999999"});
    (void)!::write(fd, out.data(), out.size());
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

// Targets of both engines, a master and a replica that never synced (which
// would ask for "PSYNC ? -1"), with another local process on the link as
// soon as the target is told where it is: the target syncs, the client
// checks the target's own INFO, and the other process gets no data.
class ReplicaTargetKinds : public SidecarTest,
                           public ::testing::WithParamInterface<std::tuple<std::string, bool>> {};

TEST_P(ReplicaTargetKinds, OnlyTheTargetGetsTheData) {
  const auto& [name, was_replica] = GetParam();
  TestServer version;
  RRS_NEED_SERVER(version, name);
  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  RedisOptions opts = RedisOptions().with_server(version);
  // A master that is not there: the target never syncs.
  if (was_replica) opts.with_args({"--replicaof", "127.0.0.1", "1"});
  RedisProcess target(opts);
  ASSERT_TRUE(target.started()) << target.start_error();
  fill_strings(master, 0, "k:", 300, 100);
  fill_strings(master, 2, "k2:", 30, 1000);
  SidecarServer server(master.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  std::atomic<bool> done{false};
  std::string impostor;
  std::thread peer([&] {
    auto other = target.connect();
    if (!other.ok()) return;
    while (!done) {
      const std::string port = other->info_field("replication", "master_port");
      if (!port.empty() && port != "1") {
        impostor = psync_anything(static_cast<uint16_t>(std::stoi(port)));
        return;
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  ClientRun run = sync_to(server.port(), target, {"--mode", "replica"});
  done = true;
  peer.join();
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(impostor.find("FULLRESYNC"), std::string::npos) << impostor;
  EXPECT_EQ(target.digest(), master.digest());
  EXPECT_EQ(target.keyspace(), master.keyspace());
  EXPECT_EQ(target.info_field("replication", "master_replid"), server.ready_fields().at("replid"));
  EXPECT_EQ(target.info_field("replication", "master_repl_offset"),
            server.ready_fields().at("offset"));
}

INSTANTIATE_TEST_SUITE_P(Engines, ReplicaTargetKinds,
                         ::testing::Combine(::testing::Values("redis-7.0", "valkey-9.1"),
                                            ::testing::Bool()));

// A restarted container runs the same --handoff again: a target that is
// already the master's replica, its link up, is left as it is (exit 0), and
// --linger keeps the probes answering, ready, until SIGTERM.
TEST_F(ReplicaModeTest, AHandedOffTargetIsLeftAloneAndLingers) {
  fill_strings(master_, 0, "k:", 100);
  target_.run({"REPLICAOF", "127.0.0.1", std::to_string(master_.port())});
  ASSERT_TRUE(eventually(
      [&] { return target_.info_field("replication", "master_link_status") == "up"; }, 30s, kPoll));
  const SyncCounters before = sync_counters(master_);
  const uint16_t metrics = free_loopback_port();
  // No sidecar on port 1: the client must not need one.
  Process client = start_client(1, target_,
                                {"--handoff", "--master", master_.address(), "--linger",
                                 "--metrics", std::to_string(metrics)});
  HttpReply r;
  EXPECT_TRUE(
      eventually([&] { return (r = http_get(metrics, "/readyz")).status == 200; }, 30s, kPoll))
      << client.describe();
  EXPECT_EQ(r.body, "ready: the target is a replica of " + master_.address() + "\n");
  EXPECT_TRUE(client.running()) << client.describe();
  EXPECT_EQ(client.terminate(), 0) << client.describe();
  EXPECT_NE(client.stderr_text().find("nothing to do"), std::string::npos) << client.describe();
  EXPECT_EQ(sync_counters(master_).full, before.full);
  EXPECT_EQ(target_.info_field("replication", "master_link_status"), "up");
}

TEST_F(ReplicaModeTest, Usage) {
  const std::string t = target_.address();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--handoff", "--master", master_.address()}, "--mode replica"},
      {{"--mode", "replica", "--merge"}, "--merge"},
      {{"--mode", "replica", "--handoff"}, "--master"},
      {{"--follow", "--linger"}, "--linger"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"127.0.0.1", "1", "--redis", t};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ClientRun run = run_client(args, {}, 20s);
    EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
    EXPECT_NE(run.err.find(c.says), std::string::npos) << run.describe();
  }
  EXPECT_EQ(target_.info_field("replication", "role"), "master");
}

}  // namespace
}  // namespace rrs::test
