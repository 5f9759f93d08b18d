// Least-privilege Redis users, as SECURITY.md lists them: each role of the
// shipped binaries runs with an ACL user holding exactly the rights the code
// needs (the sidecar's SCAN + DUMP source, restore mode with and without
// --flush, restore mode with --follow, replica mode, and --handoff's users on
// the master: the client's, for INFO, and the target's masteruser), and ends
// with the target equal to the master. For each role, the same user without
// one of its rights fails (for +config|get: warns) naming the refused command.
// The rule lists below are SECURITY.md's ACL SETUSER lines, word for word.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"
#include "tests/support/write_load.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;
using Rules = std::vector<std::string>;

// On the master.
// rdma-server --source psync (also in psync_source_test), and the target's
// masteruser once --handoff points it at the master: a replica's rights. (The
// sidecar sends no PING, and a Redis replica's handshake tolerates a refused
// one; +ping stays, as in Redis's own replica user.)
const Rules kPsyncSource = {"resetkeys", "resetchannels", "-@all", "+psync", "+replconf", "+ping"};
// rdma-server --source scan (Redis 7+; before 7.0: +pttl, and no MULTI/FUNCTION).
const Rules kScanSource = {
    "resetkeys", "~*",    "resetchannels", "-@all",  "+ping", "+info",          "+select",
    "+scan",     "+dump", "+pexpiretime",  "+multi", "+exec", "+function|list", "+function|dump"};
// rdma-client --handoff's --master-auth-file: the master's INFO.
const Rules kHandoffMaster = {"resetkeys", "resetchannels", "-@all", "+ping", "+info"};

// On the target.
// rdma-client --mode restore (also --merge). +script|load is used only for a
// table from a master before Redis 7.0, whose RDB carries Lua scripts; +set
// and +mset for strings, which go as RESTORE too without them.
const Rules kRestore = {"resetkeys", "~*",    "resetchannels",     "-@all",
                        "+ping",     "+info", "+select",           "+restore",
                        "+set",      "+mset", "+function|restore", "+script|load"};
// rdma-client --mode restore --flush: kRestore and the two flushes.
Rules restore_flush() {
  Rules r = kRestore;
  r.insert(r.end(), {"+flushall", "+function|flush"});
  return r;
}
// rdma-client --mode restore --follow: the sync (a resync flushes), then every
// command the master replicates: its writes, SELECT, MULTI/EXEC, and the two
// it replicates that are not @write, PUBLISH (to every channel) and PFCOUNT
// (which rewrites the HyperLogLog's cached cardinality); PEXPIRETIME for the
// TTL guard (client/restore/ttl_guard.h).
const Rules kFollow = {"resetkeys", "~*",           "resetchannels", "&*",       "-@all",
                       "+@write",   "+ping",        "+info",         "+select",  "+multi",
                       "+exec",     "+script|load", "+publish",      "+pfcount", "+pexpiretime"};
// rdma-client --mode replica (also --follow without --mode, --handoff): no key
// rights at all.
// +config|get is for the target checks only (ReplicaWithoutConfigGetWarns).
const Rules kReplica = {"resetkeys", "resetchannels", "-@all",      "+ping",
                        "+info",     "+config|get",   "+replicaof", "+script|load"};

// `rules` without `right` (which it must hold).
Rules without(Rules rules, const std::string& right) {
  auto it = std::find(rules.begin(), rules.end(), right);
  if (it == rules.end())
    ADD_FAILURE() << right << " is not among the rules";
  else
    rules.erase(it);
  return rules;
}

std::string password_of(const std::string& user) { return user + "-pw"; }

// How often eventually() asks (DEBUG DIGEST of both sides, INFO).
constexpr auto kPoll = 100ms;

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class AclTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(master_.started()) << master_.start_error();
    ASSERT_TRUE(target_.started()) << target_.start_error();
  }

  // ACL SETUSER <user> on ><user>-pw <rules...> on `redis`.
  static void add_user(RedisProcess& redis, const std::string& user, const Rules& rules) {
    std::vector<std::string> argv = {"ACL", "SETUSER", user, "on", ">" + password_of(user)};
    argv.insert(argv.end(), rules.begin(), rules.end());
    redis.run(argv);
  }
  // A --redis-auth-file / --master-auth-file for `user`.
  std::string auth_file(const std::string& user) {
    return dir_.write_file(user + ".auth", user + " " + password_of(user) + "\n");
  }
  static Process::Env server_env(const std::string& user) {
    return {{"RDMA_SERVER_REDIS_AUTH", user + " " + password_of(user)}};
  }
  static Process::Env client_env(const std::string& user) {
    return {{"RDMA_CLIENT_REDIS_AUTH", user + " " + password_of(user)}};
  }

  // rdma-server --source psync as the kPsyncSource user "sidecar".
  SidecarServer psync_sidecar(std::vector<std::string> extra = {}) {
    add_user(master_, "sidecar", kPsyncSource);
    extra.insert(extra.begin(), {"--source", "psync"});
    return SidecarServer(master_.address(), extra, server_env("sidecar"));
  }

  // rdma-client in the background, into target_.
  Process start_client(uint16_t server_port, std::vector<std::string> extra,
                       const Process::Env& env) {
    std::vector<std::string> argv = {
        client_binary(),  sidecar_host(),    std::to_string(server_port),
        "--redis",        target_.address(), "--transport",
        test_transport(), "--quiet"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Process(argv, env);
  }

  // The target holds the master's data; with `same_offset`, at the master's
  // replication offset too (a real replica). Records what differs on failure.
  bool converged(bool same_offset) {
    std::string why;
    bool ok = eventually(
        [&] {
          const std::string want = master_.digest(), got = target_.digest();
          const std::string want_offset = same_offset ? master_.info_field("replication",
                                                                           "master_repl_offset")
                                                      : "";
          const std::string got_offset = same_offset ? target_.info_field("replication",
                                                                          "master_repl_offset")
                                                     : "";
          if (want == got && want_offset == got_offset) return true;
          why = "master digest " + want + " offset " + want_offset + ", target digest " + got +
                " offset " + got_offset;
          return false;
        },
        20s, kPoll);
    if (!ok) ADD_FAILURE() << "the target did not converge: " << why;
    return ok;
  }

  void expect_target_equals_master() {
    EXPECT_EQ(target_.digest(), master_.digest());
    EXPECT_EQ(target_.keyspace(), master_.keyspace());
    EXPECT_EQ(target_.client().functions(), master_.client().functions());
    EXPECT_EQ(target_.client().state_outside_digest(), master_.client().state_outside_digest());
  }

  // Admin passwords on both, so nothing works without a user.
  RedisProcess master_{RedisOptions().with_password("master-admin")};
  RedisProcess target_{
      RedisOptions().with_password("target-admin").with_args({"--repl-diskless-load", "swapdb"})};
  TempDir dir_{"acl"};
};

// --- rdma-server --source scan, and rdma-client --mode restore ---

TEST_F(AclTest, ScanSourceAndRestoreUsers) {
  fill_all_types(master_);  // every type, expiries, DBs 0/1/5/15, two function libraries
  ASSERT_FALSE(HasFailure());
  add_user(master_, "sidecar-scan", kScanSource);
  add_user(target_, "loader", kRestore);

  SidecarServer server(master_.address(),
                       {"--source", "scan", "--redis-auth-file", auth_file("sidecar-scan")});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_FALSE(has(server.process().stderr_text(), "could not be dumped")) << server.describe();
  ClientRun run = sync_to(server.port(), target_, {}, client_env("loader"));
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_EQ(run.count("functions"), 2u) << run.describe();
  expect_target_equals_master();
}

TEST_F(AclTest, ScanSourceWithoutDumpFails) {
  fill_strings(master_, 0, "k:", 50);
  add_user(master_, "sidecar-scan", without(kScanSource, "+dump"));
  SidecarServer server(master_.address(),
                       {"--source", "scan", "--redis-auth-file", auth_file("sidecar-scan")});
  // Not a table without its keys: the snapshot fails, naming the right.
  EXPECT_EQ(server.process().wait(30s), exit_code::kUnavailable) << server.describe();
  const std::string err = server.process().stderr_text();
  EXPECT_TRUE(has(err, "'dump' command")) << server.describe();
  EXPECT_TRUE(has(err, "+dump")) << server.describe();
}

TEST_F(AclTest, RestoreWithoutRestoreFails) {
  fill_strings(master_, 0, "k:", 100);
  // Strings would go as MSET with +mset: none of the three writes here.
  add_user(target_, "loader", without(without(without(kRestore, "+restore"), "+set"), "+mset"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), target_, {}, client_env("loader"), 30s);
  EXPECT_NE(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(has(run.err, "NOPERM")) << run.describe();
  EXPECT_TRUE(has(run.err, "'restore' command")) << run.describe();
  EXPECT_EQ(target_.keyspace(), Keyspace{});
}

// A loader granted RESTORE but not SET/MSET (the rights before strings went
// as plain writes) still loads everything, strings as RESTOREs.
TEST_F(AclTest, RestoreWithoutSetOrMsetLoadsStringsAsRestores) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  add_user(target_, "loader", without(without(kRestore, "+set"), "+mset"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), target_, {}, client_env("loader"));
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.count("failed"), 0u) << run.describe();
  EXPECT_TRUE(has(run.err, "strings go as RESTORE")) << run.describe();
  expect_target_equals_master();
}

// --flush on a target with keys and a function library, from a master
// without functions: FLUSHALL, then FUNCTION FLUSH.
TEST_F(AclTest, RestoreFlushUser) {
  fill_strings(master_, 0, "k:", 100);
  fill_strings(master_, 3, "k3:", 20, 2000);
  fill_strings(target_, 0, "old:", 30);
  target_.run({"FUNCTION", "LOAD",
               "#!lua name=oldlib\nredis.register_function('old', function() return 1 end)"});
  ASSERT_FALSE(HasFailure());
  add_user(target_, "loader-flush", restore_flush());
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--flush", "--redis-auth-file", auth_file("loader-flush")});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  expect_target_equals_master();
  EXPECT_TRUE(target_.client().functions().empty());
}

TEST_F(AclTest, RestoreFlushWithoutFlushallFails) {
  fill_strings(master_, 0, "k:", 100);
  fill_strings(target_, 0, "old:", 30);
  const std::string before = target_.digest();
  add_user(target_, "loader-flush", without(restore_flush(), "+flushall"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--flush", "--redis-auth-file", auth_file("loader-flush")}, {}, 30s);
  EXPECT_NE(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(has(run.err, "'flushall' command")) << run.describe();
  EXPECT_EQ(target_.digest(), before) << "nothing was loaded";
}

// --- rdma-client --mode restore --follow ---

TEST_F(AclTest, FollowUser) {
  WriteLoad writer(master_);
  while (writer.rounds() < 20) std::this_thread::sleep_for(10ms);  // a dataset to snapshot
  add_user(target_, "follower", kFollow);
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  Process follower = start_client(server.port(),
                                  {"--follow", "--mode", "restore", "--status-interval", "1"},
                                  client_env("follower"));
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  // What the master replicates beyond @write: PUBLISH, and PFCOUNT when it
  // updates a HyperLogLog's cached cardinality.
  for (int i = 0; i < 20; ++i) {
    const std::string n = std::to_string(i);
    master_.run({"PFADD", "hll:" + std::to_string(i % 3), "e" + n, "f" + n});
    master_.run({"PFCOUNT", "hll:" + std::to_string(i % 3)});
    master_.run({"PUBLISH", "news", "item " + n});
    std::this_thread::sleep_for(10ms);
  }
  const uint64_t rounds = writer.rounds();
  while (writer.rounds() < rounds + 50) std::this_thread::sleep_for(10ms);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");

  EXPECT_TRUE(converged(false)) << follower.describe();
  EXPECT_EQ(target_.keyspace(), master_.keyspace());
  EXPECT_EQ(target_.client().functions(), master_.client().functions());
  EXPECT_TRUE(follower.running()) << follower.describe();
  follower.signal(SIGTERM);
  EXPECT_EQ(follower.wait(30s), 0) << follower.describe();
  EXPECT_FALSE(has(follower.stderr_text(), "NOPERM")) << follower.describe();
}

TEST_F(AclTest, FollowWithoutPublishFails) {
  fill_strings(master_, 0, "k:", 100);
  add_user(target_, "follower", without(kFollow, "+publish"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  Process follower = start_client(server.port(),
                                  {"--follow", "--mode", "restore", "--status-interval", "1"},
                                  client_env("follower"));
  ASSERT_TRUE(follower.wait_for_line("following", 60s)) << follower.describe();
  master_.run({"SET", "before", "1"});
  master_.run({"PUBLISH", "news", "hello"});
  EXPECT_EQ(follower.wait(30s), exit_code::kPartial) << follower.describe();
  const std::string err = follower.stderr_text();
  EXPECT_TRUE(has(err, "refused PUBLISH")) << follower.describe();
  EXPECT_TRUE(has(err, "'publish' command")) << follower.describe();
  EXPECT_TRUE(has(err, "lacks that right")) << follower.describe();
  EXPECT_EQ(text(target_.command({"GET", "before"})), "1") << "applied up to the PUBLISH";
}

// --- rdma-client --mode replica, and --handoff ---

TEST_F(AclTest, ReplicaUser) {
  fill_all_types(master_);
  ASSERT_FALSE(HasFailure());
  add_user(target_, "replicator", kReplica);
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--redis-auth-file", auth_file("replicator")});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_FALSE(has(run.err, "CONFIG GET refused")) << run.describe();
  expect_target_equals_master();
  EXPECT_EQ(target_.info_field("replication", "master_replid"),
            master_.info_field("replication", "master_replid"));
  EXPECT_EQ(target_.info_field("replication", "master_repl_offset"),
            server.ready_fields().at("offset"));
}

TEST_F(AclTest, ReplicaWithoutReplicaofFails) {
  fill_strings(master_, 0, "k:", 100);
  add_user(target_, "replicator", without(kReplica, "+replicaof"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--redis-auth-file", auth_file("replicator")}, {},
                          30s);
  EXPECT_NE(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(has(run.err, "'replicaof' command")) << run.describe();
  EXPECT_EQ(target_.info_field("replication", "role"), "master");
  EXPECT_EQ(target_.keyspace(), Keyspace{});
}

// +config|get is only for the target checks: without it the sync works and
// says what went unchecked.
TEST_F(AclTest, ReplicaWithoutConfigGetWarns) {
  fill_strings(master_, 0, "k:", 100);
  add_user(target_, "replicator", without(kReplica, "+config|get"));
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--redis-auth-file", auth_file("replicator")});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(has(run.err, "CONFIG GET refused")) << run.describe();
  EXPECT_TRUE(has(run.err, "+config|get")) << run.describe();
  EXPECT_EQ(target_.digest(), master_.digest());
}

// Under writes: the sidecar (psync user), the target's replicator user, the
// master's user for --handoff's INFO, and the target's own masteruser on the
// master for the partial resync.
TEST_F(AclTest, HandoffUsers) {
  add_user(target_, "replicator", kReplica);
  add_user(master_, "handoff", kHandoffMaster);
  add_user(master_, "target-link", kPsyncSource);
  target_.run({"CONFIG", "SET", "masteruser", "target-link"});
  target_.run({"CONFIG", "SET", "masterauth", password_of("target-link")});
  WriteLoad writer(master_);
  while (writer.rounds() < 20) std::this_thread::sleep_for(10ms);
  SidecarServer server = psync_sidecar();
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const std::string full_before = master_.info_field("stats", "sync_full");

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--handoff", "--master", master_.address(),
                           "--redis-auth-file", auth_file("replicator"), "--master-auth-file",
                           auth_file("handoff")},
                          {}, 120s);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(has(run.out, "partial_resync=yes")) << run.describe();
  EXPECT_EQ(target_.info_field("replication", "master_port"), std::to_string(master_.port()));
  EXPECT_EQ(target_.info_field("replication", "master_link_status"), "up");

  const uint64_t rounds = writer.rounds();
  while (writer.rounds() < rounds + 30) std::this_thread::sleep_for(10ms);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");
  EXPECT_TRUE(converged(true)) << run.describe();
  EXPECT_EQ(target_.client().functions(), master_.client().functions());
  EXPECT_EQ(master_.info_field("stats", "sync_full"), full_before) << "a partial resync only";
  // The masteruser's REPLCONF: the master knows the target's port and has
  // its acknowledgement of the last offset (what WAIT and min-replicas-* use).
  const std::string acked = "port=" + std::to_string(target_.port()) + ",state=online,offset=" +
                            master_.info_field("replication", "master_repl_offset") + ",";
  EXPECT_TRUE(eventually(
      [&] {
        return has(text(master_.command({"INFO", "replication"})), acked);
      },
      5s, kPoll))
      << acked << "\n"
      << text(master_.command({"INFO", "replication"}));
}

TEST_F(AclTest, HandoffMasterUserWithoutInfoFails) {
  fill_strings(master_, 0, "k:", 100);
  add_user(target_, "replicator", kReplica);
  add_user(master_, "handoff", without(kHandoffMaster, "+info"));
  // No change log: the handoff comes right after the sync.
  SidecarServer server = psync_sidecar({"--log-size", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--handoff", "--master", master_.address(),
                           "--redis-auth-file", auth_file("replicator"), "--master-auth-file",
                           auth_file("handoff")},
                          {}, 60s);
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_TRUE(has(run.err, "master's INFO")) << run.describe();
  EXPECT_TRUE(has(run.err, "'info' command")) << run.describe();
  EXPECT_NE(target_.info_field("replication", "master_port"), std::to_string(master_.port()))
      << "not handed off";
}

TEST_F(AclTest, TargetMasteruserWithoutPsyncFails) {
  fill_strings(master_, 0, "k:", 100);
  add_user(target_, "replicator", kReplica);
  add_user(master_, "handoff", kHandoffMaster);
  add_user(master_, "target-link", without(kPsyncSource, "+psync"));
  target_.run({"CONFIG", "SET", "masteruser", "target-link"});
  target_.run({"CONFIG", "SET", "masterauth", password_of("target-link")});
  SidecarServer server = psync_sidecar({"--log-size", "0"});
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  ClientRun run = sync_to(server.port(), target_,
                          {"--mode", "replica", "--handoff", "--master", master_.address(),
                           "--io-timeout", "5", "--redis-auth-file", auth_file("replicator"),
                           "--master-auth-file", auth_file("handoff")},
                          {}, 60s);
  EXPECT_EQ(run.exit_code, exit_code::kUnavailable) << run.describe();
  EXPECT_TRUE(has(run.err, "masteruser")) << run.describe();
  EXPECT_TRUE(has(run.err, "+psync")) << run.describe();
  // The target's log names the refused command.
  EXPECT_TRUE(has(target_.log(), "'psync' command")) << target_.log();
}

}  // namespace
}  // namespace rrs::test
