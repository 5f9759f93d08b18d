// Flag parsing of both programs: defaults, values, and the messages a bad
// flag gets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/client_config.h"
#include "common/cli/args.h"
#include "common/cli/cpu_list.h"
#include "common/net/endpoint.h"
#include "common/table/huge_pages.h"
#include "server/server_config.h"

namespace rrs {
namespace {

struct Argv {
  explicit Argv(std::vector<std::string> a) : args(std::move(a)) {
    args.insert(args.begin(), "prog");
    for (auto& s : args) ptrs.push_back(s.data());
  }
  int argc() { return static_cast<int>(ptrs.size()); }
  char** argv() { return ptrs.data(); }
  std::vector<std::string> args;
  std::vector<char*> ptrs;
};

TEST(Endpoint, Parses) {
  auto e = parse_endpoint("10.0.0.1:6380");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "10.0.0.1");
  EXPECT_EQ(e->port, 6380);
  auto v6 = parse_endpoint("[::1]:7000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(parse_endpoint("localhost").ok());
  EXPECT_FALSE(parse_endpoint("host:0").ok());
  EXPECT_FALSE(parse_endpoint("host:65536").ok());
  EXPECT_FALSE(parse_endpoint("host:12x").ok());
}

TEST(Sizes, AcceptUnits) {
  EXPECT_EQ(*parse_size("--x", "1M", 1, 1ull << 40), 1u << 20);
  EXPECT_EQ(*parse_size("--x", "64k", 1, 1ull << 40), 65536u);
  EXPECT_EQ(*parse_size("--x", "4096", 1, 1ull << 40), 4096u);
  EXPECT_FALSE(parse_size("--x", "1T", 1, 1ull << 40).ok());
  EXPECT_FALSE(parse_size("--x", "2G", 1, 1ull << 30).ok());
  EXPECT_FALSE(parse_size("--x", "", 1, 100).ok());
}

TEST(ServerConfig, DefaultsAndFlags) {
  Argv none({});
  auto d = parse_server_args(none.argc(), none.argv());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 12345);
  EXPECT_EQ(d->listen_host, "127.0.0.1");
  EXPECT_EQ(d->redis.to_string(), "127.0.0.1:6379");

  Argv a({"--redis", "10.1.1.1:7000", "--port=4000", "--listen", "0.0.0.0", "--transport", "tcp"});
  auto c = parse_server_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->redis.port, 7000);
  EXPECT_EQ(c->port, 4000);
  EXPECT_EQ(c->transport, TransportChoice::kTcp);
}

TEST(ServerConfig, RdbSourceTakesAFile) {
  Argv a({"--source", "rdb", "--rdb-file", "/backups/dump.rdb", "--port", "4000"});
  auto c = parse_server_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->source, "rdb");
  EXPECT_EQ(c->rdb_file, "/backups/dump.rdb");
}

TEST(ServerConfig, RejectsBadFlagsWithReasons) {
  for (auto [args, expect] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--port", "99999"}, "port"},
           {{"--redis"}, "needs a value"},
           {{"--source", "dump"}, "expected psync, scan or rdb"},
           {{"--source", "rdb"}, "--source rdb needs --rdb-file FILE"},
           {{"--source", "rdb", "--rdb-file", "x.rdb", "--redis", "10.0.0.1:6379"},
            "--source rdb reads no master, only --rdb-file: drop --redis"},
           {{"--redis-auth-file", "pw", "--source", "rdb", "--rdb-file", "x.rdb"},
            "drop --redis-auth-file"},
           {{"--rdb-file", "x.rdb"},
            "--rdb-file is read by --source rdb only (the source is psync)"},
           {{"--source", "scan", "--rdb-file", "x.rdb"}, "(the source is scan)"},
           {{"--transport", "ib"}, "auto, tcp or verbs"},
           {{"--bogus"}, "unknown option"},
           {{"--scan-count", "0"}, "--scan-count"}}) {
    Argv a(args);
    auto c = parse_server_args(a.argc(), a.argv());
    ASSERT_FALSE(c.ok()) << args[0];
    EXPECT_NE(c.status().message().find(expect), std::string::npos) << c.status().message();
  }
}

TEST(ClientConfig, PositionalsAndFlags) {
  Argv a({"10.0.0.5", "12345", "--redis", "127.0.0.1:6380", "--flush", "--chunk-size", "4M",
          "--in-flight", "16", "--connect-timeout", "5"});
  auto c = parse_client_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.to_string(), "10.0.0.5:12345");
  EXPECT_EQ(c->policy, TargetPolicy::kFlush);
  EXPECT_EQ(c->chunk_size, 4u << 20);
  EXPECT_EQ(c->in_flight, 16u);
  EXPECT_EQ(c->connect_timeout.count(), 5);
  EXPECT_FALSE(c->atomic);
}

TEST(ClientConfig, AtomicWithFlushFollowOrReplicaMode) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"h", "1", "--atomic"},
                                               {"h", "1", "--atomic", "--flush", "--follow"},
                                               {"h", "1", "--mode", "replica", "--atomic"}}) {
    Argv a(args);
    auto c = parse_client_args(a.argc(), a.argv());
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_TRUE(c->atomic);
  }
}

TEST(CpuList, RangesAndListsAscendingWithoutRepeats) {
  for (auto [text, want] : std::vector<std::pair<std::string, std::vector<int>>>{
           {"1", {1}}, {"0,2", {0, 2}}, {"2-4,8", {2, 3, 4, 8}}, {"3,1,1", {1, 3}}, {"5-5", {5}}}) {
    auto cpus = parse_cpu_list("--cpu", text);
    ASSERT_TRUE(cpus.ok()) << text << ": " << cpus.status().message();
    EXPECT_EQ(*cpus, want) << text;
  }
  for (std::string bad : {"", "a", "3-1", "1,", "-1", "1-", "2000", "1.5"}) {
    auto cpus = parse_cpu_list("--cpu", bad);
    ASSERT_FALSE(cpus.ok()) << bad;
    EXPECT_EQ(cpus.status().kind(), ErrorKind::kUsage) << bad;
    EXPECT_NE(cpus.status().message().find("--cpu"), std::string::npos) << bad;
  }
}

TEST(ClientConfig, CpuListFlag) {
  Argv a({"h", "1", "--cpu", "0-1"});
  auto c = parse_client_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->cpus, (std::vector<int>{0, 1}));
  Argv s({"--cpu", "1"});
  auto sc = parse_server_args(s.argc(), s.argv());
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ(sc->cpus, (std::vector<int>{1}));
}

TEST(HugePages, FlagOnBothProgramsAutoByDefault) {
  Argv none({"h", "1"});
  auto dflt = parse_client_args(none.argc(), none.argv());
  ASSERT_TRUE(dflt.ok()) << dflt.status().message();
  EXPECT_EQ(dflt->huge_pages, HugePages::kAuto);
  Argv a({"h", "1", "--huge-pages", "off"});
  auto c = parse_client_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->huge_pages, HugePages::kOff);
  Argv s({"--huge-pages", "on"});
  auto sc = parse_server_args(s.argc(), s.argv());
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  EXPECT_EQ(sc->huge_pages, HugePages::kOn);
  Argv bad({"--huge-pages", "yes"});
  auto b = parse_server_args(bad.argc(), bad.argv());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(parse_huge_pages("yes").status().kind(), ErrorKind::kUsage);
  EXPECT_NE(b.status().message().find("expected auto, on or off"), std::string::npos)
      << b.status().message();
}

// auto reads the balloon's feature bits: bit 5 (free page reporting) set
// turns huge pages off; no balloon, or one without it, leaves them on.
TEST(HugePages, AutoIsOffUnderABalloonThatReportsFreePages) {
  const auto root = std::filesystem::temp_directory_path() /
                    ("rrs-sysfs-" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  const auto device = root / "bus/virtio/drivers/virtio_balloon/virtio0";
  std::filesystem::remove_all(root);
  EXPECT_FALSE(balloon_reports_free_pages(root.string()));  // no balloon at all
  std::filesystem::create_directories(device);
  auto write_features = [&](const std::string& bits) {
    std::ofstream(device / "features") << bits << "\n";
  };
  write_features("0110000000000000000000000000000010000000");  // stats, deflate-on-oom
  EXPECT_FALSE(balloon_reports_free_pages(root.string()));
  EXPECT_NE(set_huge_pages(HugePages::kAuto, root.string()).find("on"), std::string::npos);
  EXPECT_TRUE(huge_pages_on());
  write_features("0110010100000000000000000000000010000000");  // + free page reporting
  EXPECT_TRUE(balloon_reports_free_pages(root.string()));
  EXPECT_NE(set_huge_pages(HugePages::kAuto, root.string()).find("balloon reports free memory"),
            std::string::npos);
  EXPECT_FALSE(huge_pages_on());
  set_huge_pages(HugePages::kOn, root.string());  // an explicit choice wins
  EXPECT_TRUE(huge_pages_on());
  write_features("011");  // too short to say: on
  EXPECT_FALSE(balloon_reports_free_pages(root.string()));
  std::filesystem::remove_all(root);
}

TEST(ClientConfig, ClusterTakesEverySidecar) {
  Argv a({"--cluster", "10.0.0.1:7000", "[::1]:7001", "10.0.0.3:7002", "--redis", "10.1.0.1:6379",
          "--flush"});
  auto c = parse_client_args(a.argc(), a.argv());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->cluster);
  ASSERT_EQ(c->sidecars.size(), 3u);
  EXPECT_EQ(c->sidecars[1].host, "::1");
  EXPECT_EQ(c->sidecars[2].port, 7002);
  EXPECT_EQ(c->redis.to_string(), "10.1.0.1:6379");
  EXPECT_EQ(c->policy, TargetPolicy::kFlush);
}

TEST(ClientConfig, RejectsBadFlagsWithReasons) {
  for (auto [args, expect] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{}, "expected <server-ip> <server-port>"},
           {{"1.2.3.4"}, "expected <server-ip> <server-port>"},
           {{"1.2.3.4", "0"}, "port"},
           {{"h", "1", "--flush", "--merge"}, "conflicts"},
           {{"h", "1", "--atomic", "--merge"}, "--atomic swaps whole DBs"},
           {{"h", "1", "--atomic", "--no-load"}, "--atomic needs a target"},
           {{"h", "1", "--chunk-size", "1G"}, "--chunk-size"},
           {{"h", "1", "--transport", "ib"}, "auto, tcp or verbs"},
           {{"h", "1", "--cpu", "x"}, "--cpu: expected CPU numbers"},
           {{"h", "1", "--nope"}, "unknown option"},
           {{"--cluster"}, "--cluster needs the sidecars"},
           {{"--cluster", "h"}, "--cluster sidecar 'h'"},
           {{"--cluster", "h:1", "--mode", "replica"}, "cannot be a replica of the client"},
           {{"--cluster", "h:1", "--atomic"}, "no SWAPDB"}}) {
    Argv a(args);
    auto c = parse_client_args(a.argc(), a.argv());
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(expect), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace rrs
