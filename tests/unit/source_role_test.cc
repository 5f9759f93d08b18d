// INFO replication's text into the source's role, and which roles the
// sidecar refuses to snapshot (server/source_role.h). The INFO text is a
// peer's: odd or missing fields must give a clear answer, never a crash.
#include "server/source_role.h"

#include <gtest/gtest.h>

namespace rrs {
namespace {

const Endpoint kSource{"127.0.0.1", 7001};

std::string replica_info(const std::string& link, const std::string& syncing) {
  return "# Replication\r\nrole:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:7000\r\n"
         "master_link_status:" +
         link + "\r\nmaster_sync_in_progress:" + syncing + "\r\nslave_repl_offset:42\r\n";
}

TEST(SourceRole, Master) {
  SourceRole r = parse_source_role("# Replication\r\nrole:master\r\nconnected_slaves:1\r\n");
  EXPECT_EQ(r.kind, SourceRole::kMaster);
  EXPECT_STREQ(r.name(), "master");
  EXPECT_TRUE(check_snapshot_source(kSource, r).ok());
}

TEST(SourceRole, ReplicaWithItsLinkUp) {
  SourceRole r = parse_source_role(replica_info("up", "0"));
  EXPECT_EQ(r.kind, SourceRole::kReplica);
  EXPECT_STREQ(r.name(), "replica");
  EXPECT_EQ(r.master, "10.0.0.1:7000");
  EXPECT_TRUE(check_snapshot_source(kSource, r).ok());
}

TEST(SourceRole, ReplicaWithItsLinkDownIsRefusedWithTheReason) {
  Status s = check_snapshot_source(kSource, parse_source_role(replica_info("down", "0")));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.kind(), ErrorKind::kUnavailable);
  for (const char* said : {"127.0.0.1:7001", "replica of 10.0.0.1:7000", "master_link_status:down",
                           "point --redis at the master"})
    EXPECT_NE(s.message().find(said), std::string::npos) << said << "\n" << s.message();
}

// The address goes into the ready line as one key=value token.
TEST(SourceRole, HostileMasterAddressStaysOneToken) {
  SourceRole r = parse_source_role(
      "role:slave\r\nmaster_host:evil host=x\x01\xff\r\nmaster_port:1\r\n" +
      std::string("master_link_status:up\r\n"));
  EXPECT_EQ(r.master, "evil?host=x??:1");
  SourceRole longer = parse_source_role("role:slave\r\nmaster_host:" + std::string(5000, 'h'));
  EXPECT_LE(longer.master.size(), 300u);
}

TEST(SourceRole, ReplicaStillSyncingIsRefused) {
  // The link reads up only once the sync is done; both are checked anyway.
  Status s = check_snapshot_source(kSource, parse_source_role(replica_info("up", "1")));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("still syncing"), std::string::npos) << s.message();
}

TEST(SourceRole, ReplicaWithoutALinkFieldIsRefused) {
  Status s = check_snapshot_source(kSource, parse_source_role("role:slave\r\n"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("master_link_status:?"), std::string::npos) << s.message();
}

TEST(SourceRole, AnythingElseIsUnknownAndNotRefused) {
  for (const char* info : {"", "role:sentinel\r\n", "garbage", "role:\r\n"}) {
    SourceRole r = parse_source_role(info);
    EXPECT_EQ(r.kind, SourceRole::kUnknown) << info;
    EXPECT_STREQ(r.name(), "-");
    EXPECT_TRUE(check_snapshot_source(kSource, r).ok()) << info;
  }
}

}  // namespace
}  // namespace rrs
