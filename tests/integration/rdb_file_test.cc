// rdma-server --source rdb --rdb-file FILE: the table from a backup, without
// touching any master. A SAVEd data set of every type loads in restore and
// replica mode (DEBUG DIGEST equal to the master's), from every server
// version's RDB (Redis 7.0 and 8.0, Valkey 8.0 and 9.1) and from the older
// RDB versions 6 to 9; a file saved on a replica carries the master's
// replication ID and offset, so --mode replica --handoff continues from the
// master with a partial resync (into the DB the master's stream had
// selected); a file without them refuses --handoff and --follow (exit 5); a
// missing file is exit 2, a truncated or corrupt one exit 4.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "common/cli/exit_codes.h"
#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "proto/rdb_writer.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::string_literals;

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// SAVE on `redis`: its dump.rdb, as a backup would copy it.
std::string save(RedisProcess& redis) {
  EXPECT_EQ(to_string(redis.run({"SAVE"})), "OK");
  return redis.dir().file("dump.rdb");
}

// rdma-server --source rdb --rdb-file `file` (no --redis).
SidecarServer serve_file(const std::string& file) {
  return SidecarServer("", {"--source", "rdb", "--rdb-file", file});
}

// rdma-server on a file it must refuse: its exit code; its stderr in `err`.
int refused_file(const std::string& file, std::string& err) {
  SidecarServer server = serve_file(file);
  const int code = server.process().wait(20s);
  err = server.describe();
  return code;
}

struct SyncCounters {
  uint64_t full = 0, partial_ok = 0;
};
SyncCounters sync_counters(RedisProcess& master) {
  return {std::stoull(master.info_field("stats", "sync_full")),
          std::stoull(master.info_field("stats", "sync_partial_ok"))};
}

class RdbFileTest : public SidecarTest {
 protected:
  // A target that loads a replica-mode RDB straight from the link.
  static RedisOptions target_options(const TestServer* server = nullptr) {
    RedisOptions o = RedisOptions().with_args({"--repl-diskless-load", "swapdb"});
    if (server) o.with_server(*server);
    return o;
  }

  // Loads the table `server` serves into fresh targets (of `version`, or
  // Debian's Redis 7.0) in restore and in replica mode; each must then hold
  // what `master` holds. The replica-mode run and its target's role are
  // kept in replica_run_ and replica_role_.
  void expect_loads_in_both_modes(SidecarServer& server, RedisProcess& master,
                                  const TestServer* version = nullptr) {
    for (const std::string mode : {"restore", "replica"}) {
      SCOPED_TRACE(mode);
      RedisProcess target(target_options(version));
      ASSERT_TRUE(target.started()) << target.start_error();
      ClientRun run = sync_to(server.port(), target, {"--mode", mode});
      ASSERT_EQ(run.exit_code, 0) << run.describe();
      EXPECT_EQ(run.count("keys"), master.client().total_keys()) << run.describe();
      EXPECT_EQ(target.digest(), master.digest());
      EXPECT_EQ(target.keyspace(), master.keyspace());
      EXPECT_EQ(target.client().functions(), master.client().functions());
      EXPECT_EQ(target.client().state_outside_digest(), master.client().state_outside_digest());
      if (mode == "replica") {
        replica_role_ = target.info_field("replication", "role");
        replica_run_ = std::move(run);
      }
    }
  }

  ClientRun replica_run_;
  std::string replica_role_;
};

TEST_F(RdbFileTest, EveryTypeFromABackupInBothModes) {
  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_all_types(master);
  ASSERT_FALSE(HasFailure());
  const std::string file = save(master);

  SidecarServer server = serve_file(file);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const Fields& ready = server.ready_fields();
  EXPECT_EQ(ready.at("source"), "rdb") << server.ready_line();
  EXPECT_EQ(ready.at("engine"), "redis") << server.ready_line();
  EXPECT_EQ(ready.at("version"), master.info_field("server", "redis_version"))
      << server.ready_line();
  EXPECT_EQ(ready.at("rdb"), "10") << server.ready_line();  // Redis 7.0
  EXPECT_EQ(ready.at("functions"), "2") << server.ready_line();
  EXPECT_EQ(field_u64(ready, "records"), master.client().total_keys()) << server.ready_line();
  // A master without replicas has no backlog: its RDB has no repl-id.
  EXPECT_EQ(ready.at("replid"), "-") << server.ready_line();
  EXPECT_EQ(ready.at("log_bytes"), "0") << server.ready_line();

  expect_loads_in_both_modes(server, master);
  // Replica mode without a history to continue leaves a standalone copy.
  EXPECT_EQ(replica_role_, "master");
  EXPECT_NE(replica_run_.err.find("without repl-id/repl-offset"), std::string::npos)
      << replica_run_.describe();
}

// A file without repl-id/repl-offset has no place in the master's history:
// --handoff and --follow are refused before the target is touched.
TEST_F(RdbFileTest, WithoutReplicationInfoHandoffAndFollowAreRefused) {
  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_strings(master, 0, "k:", 50);
  SidecarServer server = serve_file(save(master));
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  RedisProcess target(target_options());
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun handoff = sync_to(server.port(), target,
                              {"--mode", "replica", "--handoff", "--master", master.address()});
  EXPECT_EQ(handoff.exit_code, exit_code::kRefused) << handoff.describe();
  EXPECT_NE(handoff.err.find("no repl-id/repl-offset aux fields"), std::string::npos)
      << handoff.describe();
  for (const char* mode : {"restore", "replica"}) {
    ClientRun follow = sync_to(server.port(), target, {"--mode", mode, "--follow"});
    EXPECT_EQ(follow.exit_code, exit_code::kRefused) << follow.describe();
    EXPECT_NE(follow.err.find("no change log to follow"), std::string::npos) << follow.describe();
  }
  EXPECT_EQ(target.client().total_keys(), 0u) << "a refusal loads nothing";
  EXPECT_EQ(target.info_field("replication", "role"), "master");
}

// A backup taken on a replica holds the master's replication ID and the
// replica's offset, and the DB the master's stream had selected there. A
// target loaded from it hands off to the master, which continues it with a
// partial resync; writes after the backup that carry no SELECT land in the
// right DB.
TEST_F(RdbFileTest, BackupOfAReplicaHandsOffWithAPartialResync) {
  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_all_types(master);
  RedisProcess replica(
      RedisOptions().with_args({"--replicaof", "127.0.0.1", std::to_string(master.port())}));
  ASSERT_TRUE(replica.started()) << replica.start_error();
  // The last write before the backup selects DB 5 in the master's stream.
  master.client().select(5);
  master.run({"SET", "before-backup", "1"});
  const auto caught_up = [&] {
    return replica.info_field("replication", "master_link_status") == "up" &&
           replica.info_field("replication", "master_repl_offset") ==
               master.info_field("replication", "master_repl_offset");
  };
  ASSERT_TRUE(eventually(caught_up, 30s, 50ms)) << replica.log();
  const std::string file = save(replica);
  const std::string backup_offset = replica.info_field("replication", "master_repl_offset");
  // More writes after the backup, in the same DB: the stream has no SELECT.
  for (int i = 0; i < 20; ++i) master.run({"SET", "after-backup:" + std::to_string(i), "x"});
  master.client().select(0);

  SidecarServer server = serve_file(file);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("source"), "rdb") << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("replid"), master.info_field("replication", "master_replid"))
      << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("offset"), backup_offset) << server.ready_line();

  const SyncCounters before = sync_counters(master);
  RedisProcess target(target_options());
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = sync_to(server.port(), target,
                          {"--mode", "replica", "--handoff", "--master", master.address()});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.summary["offset"], backup_offset) << run.describe();
  const size_t at = run.out.find("handoff ");
  ASSERT_NE(at, std::string::npos) << run.describe();
  Fields f = parse_fields(run.out.substr(at));
  EXPECT_EQ(f["partial_resync"], "yes") << run.describe();
  EXPECT_EQ(f["sync_partial_ok"], "+1") << run.describe();
  EXPECT_EQ(f["sync_full"], "+0") << run.describe();
  const SyncCounters after = sync_counters(master);
  EXPECT_EQ(after.partial_ok, before.partial_ok + 1);
  EXPECT_EQ(after.full, before.full);

  master.run({"SET", "after-handoff", "y"});
  EXPECT_TRUE(eventually(
      [&] {
        return target.info_field("replication", "master_repl_offset") ==
                   master.info_field("replication", "master_repl_offset") &&
               target.digest() == master.digest();
      },
      20s, 100ms))
      << "target " << target.keyspace() << " master " << master.keyspace();
  target.client().select(5);
  EXPECT_EQ(text(target.command({"GET", "after-backup:19"})), "x");
  target.client().select(0);
  EXPECT_EQ(target.info_field("replication", "master_port"), std::to_string(master.port()));
  EXPECT_EQ(target.info_field("replication", "master_link_status"), "up");
}

// A master that has had a replica keeps a backlog, and then saves its own
// replication ID and offset too.
TEST_F(RdbFileTest, BackupOfAMasterWithABacklogCarriesItsOffset) {
  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_strings(master, 0, "k:", 50);
  {
    RedisProcess replica(
        RedisOptions().with_args({"--replicaof", "127.0.0.1", std::to_string(master.port())}));
    ASSERT_TRUE(replica.started()) << replica.start_error();
    ASSERT_TRUE(eventually(
        [&] { return replica.info_field("replication", "master_link_status") == "up"; }, 30s));
  }
  ASSERT_EQ(master.info_field("replication", "repl_backlog_active"), "1");
  const std::string file = save(master);
  const std::string offset = master.info_field("replication", "master_repl_offset");
  SidecarServer server = serve_file(file);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("replid"), master.info_field("replication", "master_replid"))
      << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("offset"), offset) << server.ready_line();
}

// Each newer server's own RDB (Valkey 8.0: 11, Redis 8.0: 12, Valkey 9.1:
// VALKEY 80) serves and loads into a target of the same version.
class RdbFileVersions : public RdbFileTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(RdbFileVersions, LoadsInBothModes) {
  TestServer version;
  RRS_NEED_SERVER(version, GetParam());
  RedisProcess master(RedisOptions().with_server(version));
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_all_types(master);
  ASSERT_FALSE(HasFailure());

  SidecarServer server = serve_file(save(master));
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  const Fields& ready = server.ready_fields();
  EXPECT_EQ(ready.at("engine"), version.engine()) << server.ready_line();
  EXPECT_EQ(ready.at("version"), version.version) << server.ready_line();
  const std::string rdb = version.name == "valkey-8.0"  ? "11"
                          : version.name == "redis-8.0" ? "12"
                                                        : "80";
  EXPECT_EQ(ready.at("rdb"), rdb) << server.ready_line();
  expect_loads_in_both_modes(server, master, &version);
}

INSTANTIATE_TEST_SUITE_P(Servers, RdbFileVersions,
                         ::testing::Values("valkey-8.0", "redis-8.0", "valkey-9.1"),
                         [](const auto& server) {
                           std::string name = server.param;
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name;
                         });

// The same small data set, written by hand at one RDB version.
std::string old_rdb(uint16_t version, int64_t expire_at_ms) {
  const auto payload = [version](uint8_t type, const std::string& value) {
    std::string p(dump::payload_size(value.size()), '\0');
    dump::write_payload(type, value, version, p.data());
    return p;
  };
  const auto str = [](const std::string& s) {
    std::string out;
    rdb::append_length(out, s.size());
    return out + s;
  };
  rdb::RdbWriter w(version);
  if (version >= 7) w.aux("redis-ver", version == 7 ? "3.2.0" : version == 8 ? "4.0.0" : "5.0.0");
  w.select_db(0, 3, 1);
  EXPECT_TRUE(w.key("string", payload(0, str("v" + std::to_string(version))), -1).ok());
  EXPECT_TRUE(w.key("set", payload(2, "\x03" + str("a") + str("b") + str("c")), -1).ok());
  EXPECT_TRUE(w.key("hash", payload(4, "\x02" + str("f1") + str("v1") + str("f2") + str("v2")),
                    expire_at_ms)
                  .ok());
  w.select_db(2, 1, 0);
  EXPECT_TRUE(w.key("in-db-2", payload(0, str("two")), -1).ok());
  w.end();
  return std::string(w.take());
}

// RDB versions 6 to 9 (Redis 2.6 to 5.0), which no server here writes:
// files written with the project's RDB writer. Each serves and
// loads into Redis 7.0 as the same keys typed by hand.
TEST_F(RdbFileTest, OlderRdbVersionsLoad) {
  const int64_t expire_at = 4102444800000;  // 2100-01-01
  TempDir dir("rdbfile");
  for (uint16_t version = 6; version <= 9; ++version) {
    SCOPED_TRACE("RDB " + std::to_string(version));
    RedisProcess want, target;
    ASSERT_TRUE(want.started()) << want.start_error();
    ASSERT_TRUE(target.started()) << target.start_error();
    want.run({"SET", "string", "v" + std::to_string(version)});
    want.run({"SADD", "set", "a", "b", "c"});
    want.run({"HSET", "hash", "f1", "v1", "f2", "v2"});
    want.run({"PEXPIREAT", "hash", std::to_string(expire_at)});
    want.client().select(2);
    want.run({"SET", "in-db-2", "two"});
    want.client().select(0);

    const std::string file = dir.write_file("v" + std::to_string(version) + ".rdb",
                                            old_rdb(version, expire_at));
    SidecarServer server = serve_file(file);
    ASSERT_TRUE(server.wait_ready()) << server.describe();
    EXPECT_EQ(server.ready_fields().at("rdb"), std::to_string(version)) << server.ready_line();
    ClientRun run = sync_to(server.port(), target);
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_EQ(target.digest(), want.digest());
    EXPECT_EQ(target.keyspace(), want.keyspace());
  }
}

// What the table cannot carry: module data that is not a key (MODULE_AUX)
// is counted, and the client refuses the table (exit 5, the target
// untouched) unless told --skip-module-data; an empty collection, which a
// server drops at load, is left out and counted.
TEST_F(RdbFileTest, ModuleDataIsRefusedUnlessSkippedAndEmptyCollectionsAreDropped) {
  std::string rdb = "REDIS0010";
  rdb += "\xfa";  // AUX redis-ver 7.0.15
  rdb += "\x09"
         "redis-ver"
         "\x06"
         "7.0.15";
  rdb += "\xf7\x05\x02\x02\x02\x07"s;  // MODULE_AUX: id 5, when 2 (after), uint 7
  rdb += '\0';                         // module EOF
  rdb += "\xfe\x00"s;                  // SELECTDB 0
  rdb += "\x00\x01k\x01v"s;            // string k = v
  rdb += "\x01\x05"
         "empty"
         "\x00"s;                        // a list with no elements
  rdb += "\xff" + std::string(8, '\0');  // EOF, no checksum
  TempDir dir("rdbfile");
  SidecarServer server = serve_file(dir.write_file("module.rdb", rdb));
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("module_aux"), "1") << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("empty_skipped"), "1") << server.ready_line();
  EXPECT_EQ(server.ready_fields().at("records"), "1") << server.ready_line();

  for (const char* mode : {"restore", "replica"}) {
    SCOPED_TRACE(mode);
    RedisProcess target;
    ASSERT_TRUE(target.started()) << target.start_error();
    ClientRun refused = sync_to(server.port(), target, {"--mode", mode});
    EXPECT_EQ(refused.exit_code, exit_code::kRefused) << refused.describe();
    EXPECT_NE(refused.err.find("--skip-module-data"), std::string::npos) << refused.describe();
    EXPECT_EQ(target.client().total_keys(), 0u);
    ClientRun run = sync_to(server.port(), target, {"--mode", mode, "--skip-module-data"});
    EXPECT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_NE(run.err.find("dropping 1 blocks of module data"), std::string::npos)
        << run.describe();
    EXPECT_EQ(text(target.run({"GET", "k"})), "v");
    EXPECT_EQ(target.client().total_keys(), 1u);
  }
}

TEST_F(RdbFileTest, MissingTruncatedOrCorruptFilesAreRefused) {
  TempDir dir("rdbfile");
  std::string err;
  const std::string missing = dir.file("no-such.rdb");
  EXPECT_EQ(refused_file(missing, err), exit_code::kUsage) << err;
  EXPECT_NE(err.find("open RDB file " + missing + ": No such file or directory"), std::string::npos)
      << err;
  EXPECT_EQ(refused_file(dir.path(), err), exit_code::kUsage) << err;
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;

  RedisProcess master;
  ASSERT_TRUE(master.started()) << master.start_error();
  fill_strings(master, 0, "k:", 2000, 100);
  const std::string whole = read_file(save(master));
  ASSERT_GT(whole.size(), 100000u);

  const std::string cut = dir.write_file("cut.rdb", whole.substr(0, whole.size() / 2));
  EXPECT_EQ(refused_file(cut, err), exit_code::kBadData) << err;
  EXPECT_NE(err.find("RDB file " + cut + ": it ends at byte " + std::to_string(whole.size() / 2)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;

  // Only the checksum is left out: the parser waits for it.
  const std::string no_crc = dir.write_file("no-crc.rdb", whole.substr(0, whole.size() - 8));
  EXPECT_EQ(refused_file(no_crc, err), exit_code::kBadData) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;

  std::string flipped = whole;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x55);
  const std::string corrupt = dir.write_file("corrupt.rdb", flipped);
  EXPECT_EQ(refused_file(corrupt, err), exit_code::kBadData) << err;
  EXPECT_NE(err.find("RDB file " + corrupt + ": RDB at byte "), std::string::npos) << err;

  const std::string longer = dir.write_file("longer.rdb", whole + "*1\r\n$4\r\nPING\r\n");
  EXPECT_EQ(refused_file(longer, err), exit_code::kBadData) << err;
  EXPECT_NE(err.find("bytes follow the RDB's end"), std::string::npos) << err;
}

}  // namespace
}  // namespace rrs::test
