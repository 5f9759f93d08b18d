// --redis-tls against real TLS-only servers (port 0, tls-port,
// tls-auth-clients yes, tls-replication yes): Redis 7.0 from Debian and
// Valkey 9.1 built with TLS. Each load path ends equal to the master; each
// way TLS can go wrong is a clear error naming the peer and the cause, with
// the exit code docs/tls.md gives, and the target untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <thread>

#include "common/cli/exit_codes.h"
#include "tests/support/cluster_dataset.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pki.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

// `a` then `b`.
std::vector<std::string> joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Certificates first: the servers are started with them.
class TlsServers {
 protected:
  TempDir pki_dir_{"tls-pki"};
  TestPki pki_{pki_dir_.path()};
  RedisTls tls_ = make_redis_tls(pki_);
};

// A TLS-only master and target of one server version (the parameter).
class TlsRedisTest : public SidecarTest,
                     public TlsServers,
                     public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    RRS_NEED_SERVER(server_, GetParam());
    master_.emplace(RedisOptions().with_server(server_).with_tls(tls_));
    target_.emplace(RedisOptions().with_server(server_).with_tls(tls_));
    ASSERT_TRUE(master_->started()) << master_->start_error();
    ASSERT_TRUE(target_->started()) << target_->start_error();
    fill_all_types(*master_);
    fill_strings(*master_, 3, "db3:", 500);
    ASSERT_FALSE(HasFailure());
  }

  void expect_equal() {
    EXPECT_EQ(target_->digest(), master_->digest());
    EXPECT_EQ(target_->keyspace(), master_->keyspace());
  }

  TestServer server_;
  std::optional<RedisProcess> master_, target_;
};

TEST_P(TlsRedisTest, RestoreModeFromATlsMasterIntoATlsTarget) {
  SidecarServer server(master_->address(), tls_.sidecar_args());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), *target_,
                          joined({"--mode", "restore"}, tls_.sidecar_args()));
  EXPECT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  expect_equal();
}

TEST_P(TlsRedisTest, ScanSourceAndVerify) {
  SidecarServer server(master_->address(), joined({"--source", "scan"}, tls_.sidecar_args()));
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), *target_,
                          joined({"--mode", "restore"}, tls_.sidecar_args()));
  EXPECT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  expect_equal();
  ClientRun verify = run_client(
      joined({"--verify", "--source-redis", master_->address(), "--redis", target_->address()},
             tls_.sidecar_args()));
  EXPECT_EQ(verify.exit_code, exit_code::kOk) << verify.describe();
}

TEST_P(TlsRedisTest, FollowsTheMastersStream) {
  SidecarServer server(master_->address(), tls_.sidecar_args());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  Process follower(joined({client_binary(), sidecar_host(), std::to_string(server.port()),
                           "--redis", target_->address(), "--follow", "--mode", "restore",
                           "--transport", test_transport(), "--quiet"},
                          tls_.sidecar_args()));
  fill_strings(*master_, 0, "after:", 300);
  master_->run({"DEL", "db3:7"});
  EXPECT_TRUE(eventually([&] { return target_->digest() == master_->digest(); }, 30s))
      << follower.describe();
  EXPECT_TRUE(follower.running()) << follower.describe();
  follower.terminate(5s);
}

// The target connects to the client's replica link with TLS (its
// tls-replication yes), and after --handoff to the master, which continues
// it with a partial resync over TLS.
TEST_P(TlsRedisTest, ReplicaModeAndHandoff) {
  SidecarServer server(master_->address(), tls_.sidecar_args());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  fill_strings(*master_, 0, "past-the-table:", 200);
  const std::string partial_before = master_->info_field("stats", "sync_partial_ok");
  const std::string full_before = master_->info_field("stats", "sync_full");
  ClientRun run = sync_to(server.port(), *target_,
                          joined({"--mode", "replica", "--handoff", "--master", master_->address()},
                                 tls_.sidecar_args()));
  EXPECT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  EXPECT_NE(run.err.find("replicates over TLS"), std::string::npos) << run.describe();
  EXPECT_TRUE(eventually(
      [&] { return target_->info_field("replication", "master_link_status") == "up"; }, 30s))
      << run.describe();
  EXPECT_EQ(target_->info_field("replication", "master_port"), std::to_string(master_->port()));
  EXPECT_EQ(master_->info_field("stats", "sync_full"), full_before) << "no full sync";
  EXPECT_NE(master_->info_field("stats", "sync_partial_ok"), partial_before);
  master_->run({"SET", "after-the-handoff", "1"});
  EXPECT_TRUE(eventually([&] { return target_->digest() == master_->digest(); }, 30s));
}

// Three TLS shards (tls-cluster yes) copied into a TLS cluster of two
// masters, so that keys move between shards: each node and every
// redirection over TLS.
TEST_P(TlsRedisTest, ATlsClusterIntoATlsCluster) {
  ClusterOptions options = ClusterOptions().with_server(server_);
  options.node.with_tls(tls_);
  RedisCluster source(ClusterOptions(options).with_masters(3));
  ASSERT_TRUE(source.started()) << source.start_error();
  RedisCluster target(ClusterOptions(options).with_masters(2));
  ASSERT_TRUE(target.started()) << target.start_error();
  const ClusterFill fill = fill_cluster(source, 2000);

  std::vector<std::unique_ptr<SidecarServer>> sidecars;
  std::vector<std::string> args = {"--cluster"};
  for (RedisProcess* m : source.masters()) {
    sidecars.push_back(std::make_unique<SidecarServer>(m->address(), tls_.sidecar_args()));
    ASSERT_TRUE(sidecars.back()->wait_ready()) << sidecars.back()->describe();
    args.push_back(sidecar_host() + ":" + std::to_string(sidecars.back()->port()));
  }
  ClientRun run = run_client(
      joined(joined(args, {"--redis", target.seed(), "--transport", test_transport()}),
             tls_.sidecar_args()));
  ASSERT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  EXPECT_EQ(target.total_keys(), fill.keys);
  EXPECT_EQ(target.keys_per_slot(), fill.keys_per_slot);
  EXPECT_EQ(target.logical_state(), source.logical_state());
}

INSTANTIATE_TEST_SUITE_P(Servers, TlsRedisTest, ::testing::Values("redis-7.0", "valkey-9.1"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name;
                         });

// What goes wrong, each against a target that must stay as it was.
class TlsRefusalTest : public SidecarTest, public TlsServers {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(master_.started()) << master_.start_error();
    fill_strings(master_, 0, "k:", 100);
    server_.emplace(master_.address());
    ASSERT_TRUE(server_->wait_ready()) << server_->describe();
  }

  // A TLS target holding one marker key, serving `cert` (a name in pki_).
  RedisProcess& start_target(const std::string& cert, bool auth_clients = true) {
    RedisTls t = tls_;
    t.cert = pki_.crt(cert);
    t.key = pki_.key(cert);
    t.test_verifies = false;
    t.auth_clients = auth_clients;
    target_.emplace(RedisOptions().with_tls(t));
    EXPECT_TRUE(target_->started()) << target_->start_error();
    target_->run({"SET", "marker", "untouched"});
    return *target_;
  }

  // Runs the client into `target` with `args` (--mode restore unless they
  // name one); expects `code` and a message
  // holding each of `says`, and the target as it was.
  void expect_refused(const RedisProcess& target, const std::vector<std::string>& args, int code,
                      const std::vector<std::string>& says) {
    const std::string before = digest_of(target);
    const bool has_mode = std::find(args.begin(), args.end(), "--mode") != args.end();
    ClientRun run = sync_to(server_->port(), target,
                            has_mode ? args : joined({"--mode", "restore"}, args), {}, 60s);
    EXPECT_EQ(run.exit_code, code) << run.describe();
    for (const std::string& s : says)
      EXPECT_NE(run.err.find(s), std::string::npos) << "want \"" << s << "\"\n" << run.describe();
    EXPECT_EQ(digest_of(target), before) << "the target was changed\n" << run.describe();
  }

  RedisProcess master_;
  std::optional<SidecarServer> server_;
  std::optional<RedisProcess> target_;
};

TEST_F(TlsRefusalTest, ACaThatDidNotSignTheTargetsCertificate) {
  pki_.make_ca("other-ca");
  RedisProcess& target = start_target("redis");
  std::vector<std::string> args = tls_.sidecar_args();
  args[2] = pki_.crt("other-ca");
  expect_refused(target, args, exit_code::kUnavailable,
                 {target.address(), "--redis-tls-cacert", pki_.crt("other-ca")});
}

TEST_F(TlsRefusalTest, AnExpiredTargetCertificate) {
  pki_.make_cert("expired", "ca", CertSpec{"localhost", {"localhost"}, {"127.0.0.1"}, -30, -1});
  RedisProcess& target = start_target("expired");
  expect_refused(target, tls_.sidecar_args(), exit_code::kUnavailable,
                 {target.address(), "expired"});
}

TEST_F(TlsRefusalTest, ACertificateForAnotherNameUnlessSniNamesIt) {
  pki_.make_cert("elsewhere", "ca", CertSpec{"redis.example", {"redis.example"}, {}, -1, 30});
  RedisProcess& target = start_target("elsewhere");
  expect_refused(target, tls_.sidecar_args(), exit_code::kUnavailable,
                 {target.address(), "--redis-tls-sni"});
  ClientRun run = sync_to(
      server_->port(), target,
      joined({"--mode", "restore", "--flush", "--redis-tls-sni", "redis.example"},
             tls_.sidecar_args()));
  EXPECT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  EXPECT_EQ(digest_of(target), master_.digest());
}

TEST_F(TlsRefusalTest, NoClientCertificateForATargetThatWantsOne) {
  RedisProcess& target = start_target("redis");
  expect_refused(target, {"--redis-tls", "--redis-tls-cacert", tls_.ca}, exit_code::kUnavailable,
                 {target.address(), "--redis-tls-cert"});
}

TEST_F(TlsRefusalTest, PlainTcpToATlsPort) {
  RedisProcess& target = start_target("redis");
  expect_refused(target, {}, exit_code::kUnavailable, {target.address(), "--redis-tls"});
}

TEST_F(TlsRefusalTest, TlsToAPlainPort) {
  RedisProcess plain;
  ASSERT_TRUE(plain.started()) << plain.start_error();
  plain.run({"SET", "marker", "untouched"});
  // --io-timeout: a plain Redis never answers a TLS hello.
  expect_refused(plain, joined({"--io-timeout", "2"}, tls_.sidecar_args()), exit_code::kUnavailable,
                 {plain.address(), "--redis-tls"});
}

TEST_F(TlsRefusalTest, TheServerRefusesAMasterItCannotVerify) {
  pki_.make_ca("other-ca");
  RedisProcess tls_master(RedisOptions().with_tls(tls_));
  ASSERT_TRUE(tls_master.started()) << tls_master.start_error();
  std::vector<std::string> args = tls_.sidecar_args();
  args[2] = pki_.crt("other-ca");
  SidecarServer server(tls_master.address(), args);
  EXPECT_EQ(server.process().wait(30s), exit_code::kUnavailable) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(tls_master.address()), std::string::npos)
      << server.describe();
}

// A target that replicates over TLS must be shown a certificate it trusts
// (here it asks for none from its clients, so only the link is refused).
TEST_F(TlsRefusalTest, ReplicaModeTargetRefusesTheLinksCertificate) {
  pki_.make_ca("other-ca");
  pki_.make_localhost_cert("other", "other-ca");
  RedisProcess& target = start_target("redis", false);
  std::vector<std::string> args = tls_.sidecar_args();
  args[4] = pki_.crt("other");
  args[6] = pki_.key("other");
  expect_refused(target, joined({"--mode", "replica", "--flush", "--io-timeout", "5"}, args),
                 exit_code::kUnavailable, {"the last one dropped", "--redis-tls-cert"});
  EXPECT_EQ(target.info_field("replication", "role"), "master") << "detached again";
}

// A plain port, but replication over TLS.
TEST_F(TlsRefusalTest, ReplicaModeTargetOverTlsNeedsRedisTls) {
  RedisProcess target(
      RedisOptions().with_args({"--tls-cert-file", tls_.cert, "--tls-key-file", tls_.key,
                                "--tls-ca-cert-file", tls_.ca, "--tls-replication", "yes"}));
  ASSERT_TRUE(target.started()) << target.start_error();
  target.run({"SET", "marker", "untouched"});
  expect_refused(target, {"--mode", "replica", "--flush"}, exit_code::kUsage,
                 {"tls-replication yes", "--redis-tls-cert"});
}

TEST_F(TlsRefusalTest, FilesWithoutRedisTlsOrUnreadableAreUsageErrors) {
  RedisProcess& target = start_target("redis");
  expect_refused(target, {"--redis-tls-cacert", tls_.ca}, exit_code::kUsage,
                 {"--redis-tls-cacert needs --redis-tls"});
  expect_refused(target, {"--redis-tls", "--redis-tls-cacert", pki_dir_.path() + "/none.crt"},
                 exit_code::kUsage, {"--redis-tls-cacert", "none.crt"});
}

// The TCP transport with --tls: the table crosses TLS 1.3, the shared
// secret still asked for inside.
class TlsTransportTest : public MasterTest, public TlsServers {
 protected:
  void SetUp() override {
    MasterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    fill_all_types(master_);
    ASSERT_TRUE(target_.started()) << target_.start_error();
  }
  std::vector<std::string> server_tls() const {
    return {"--transport",     "tcp",       "--tls",          "--tls-cert",
            pki_.crt("redis"), "--tls-key", pki_.key("redis")};
  }
  std::vector<std::string> client_tls() const {
    return {"--transport", "tcp", "--tls", "--tls-cacert", tls_.ca};
  }
  RedisProcess target_;
};

TEST_F(TlsTransportTest, RestoreModeOverTlsWithASecret) {
  const Process::Env secret = {{"RDMA_SIDECAR_SECRET", std::string(32, 's')}};
  const uint16_t metrics_port = free_loopback_port();
  SidecarServer server(master_.address(),
                       joined(server_tls(), {"--metrics", std::to_string(metrics_port)}), secret);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  EXPECT_EQ(server.ready_fields().at("tls"), "on") << server.ready_line();
  const std::string scraped = http_get(metrics_port, "/metrics").body;
  EXPECT_EQ(sample_value(scraped, "rrs_server_tls{wire=\"table\"}"), 1) << scraped;
  EXPECT_EQ(sample_value(scraped, "rrs_server_tls{wire=\"redis\"}"), 0) << scraped;
  ClientRun run = run_client(joined({sidecar_host(), std::to_string(server.port()), "--redis",
                                     target_.address(), "--mode", "restore"},
                                    client_tls()),
                             secret);
  EXPECT_EQ(run.exit_code, exit_code::kOk) << run.describe();
  EXPECT_NE(run.err.find("TLS with rdma-server"), std::string::npos) << run.describe();
  EXPECT_NE(server.process().stderr_text().find("authenticated (TLSv1.3 "), std::string::npos)
      << server.describe();
  EXPECT_EQ(target_.digest(), master_.digest());
}

// Serving beyond loopback (a secret is required there) without --tls is
// allowed, said once at start; with --tls it is not said.
TEST_F(TlsTransportTest, ClearTextBeyondLoopbackIsWarnedOf) {
  const Process::Env secret = {{"RDMA_SIDECAR_SECRET", std::string(32, 's')}};
  SidecarServer plain(master_.address(), {"--listen", "0.0.0.0", "--transport", "tcp"}, secret);
  ASSERT_TRUE(plain.wait_ready()) << plain.describe();
  EXPECT_EQ(plain.ready_fields().at("tls"), "off") << plain.ready_line();
  EXPECT_NE(plain.process().stderr_text().find("crosses the network in clear text"),
            std::string::npos)
      << plain.describe();
  SidecarServer tls(master_.address(), joined({"--listen", "0.0.0.0"}, server_tls()), secret);
  ASSERT_TRUE(tls.wait_ready()) << tls.describe();
  EXPECT_EQ(tls.process().stderr_text().find("clear text"), std::string::npos) << tls.describe();
}

TEST_F(TlsTransportTest, TlsIsRefusedWithVerbs) {
  ClientRun run = run_client(
      {sidecar_host(), "1", "--redis", target_.address(), "--transport", "verbs", "--tls"});
  EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
  EXPECT_NE(run.err.find("RDMA traffic is not encrypted"), std::string::npos) << run.describe();
  SidecarServer server(master_.address(), {"--transport", "verbs", "--tls"});
  EXPECT_EQ(server.process().wait(10s), exit_code::kUsage) << server.describe();
}

}  // namespace
}  // namespace rrs::test
