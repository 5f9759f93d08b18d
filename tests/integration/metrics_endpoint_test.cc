// --metrics on both programs, scraped with a plain HTTP GET during a sync and
// a follow: every name is listed from the first scrape, the values match what
// the programs print, other paths get 404, and a port already taken is
// refused at start with exit 2.
#include <gtest/gtest.h>

#include "common/cli/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

std::string scrape(uint16_t port) { return http_get(port, "/metrics").body; }

// Polls the sample until `ok` holds for its value; the last text on failure.
template <class Pred>
bool sample_becomes(uint16_t port, const std::string& series, Pred ok, std::string& last) {
  return eventually(
      [&] {
        last = scrape(port);
        auto v = sample_value(last, series);
        return v && ok(*v);
      },
      30s, 100ms);
}

class MetricsEndpointTest : public SidecarTest {
 protected:
  RedisProcess master_, replica_;
};

TEST_F(MetricsEndpointTest, ServerAndFollowerDuringSyncAndFollow) {
  ASSERT_TRUE(master_.started()) << master_.start_error();
  ASSERT_TRUE(replica_.started()) << replica_.start_error();
  fill_strings(master_, 0, "a:", 1500);
  fill_strings(master_, 3, "b:", 200);
  const uint16_t server_metrics = free_loopback_port();
  SidecarServer server(master_.address(), {"--metrics", std::to_string(server_metrics)});
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  const HttpReply r = http_get(server_metrics, "/metrics");
  ASSERT_EQ(r.status, 200) << server.describe();
  EXPECT_NE(r.headers.find("text/plain; version=0.0.4"), std::string::npos) << r.headers;
  EXPECT_EQ(sample_value(r.body, "rrs_server_table_records{db=\"0\"}"), 1500);
  EXPECT_EQ(sample_value(r.body, "rrs_server_table_records{db=\"3\"}"), 200);
  EXPECT_EQ(sample_value(r.body, "rrs_server_snapshots_total"), 1);
  EXPECT_EQ(sample_value(r.body, "rrs_server_epoch"),
            static_cast<double>(*field_u64(server.ready_fields(), "epoch")));
  EXPECT_EQ(sample_value(r.body, "rrs_server_table_bytes"),
            static_cast<double>(*field_u64(server.ready_fields(), "bytes")));
  const double age = sample_value(r.body, "rrs_server_epoch_age_seconds").value_or(-1);
  EXPECT_TRUE(age >= 0 && age < 600) << age;
  // Named before anything happened to them.
  for (const char* name : {"rrs_server_refusals_total", "rrs_server_reads_served_total",
                           "rrs_server_change_log_bytes", "rrs_server_clients"})
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
  EXPECT_EQ(http_get(server_metrics, "/").status, 404);
  EXPECT_EQ(http_get(server_metrics, "/metrics/x").status, 404);

  const uint16_t client_metrics = free_loopback_port();
  Process follower({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                    replica_.address(), "--follow", "--mode", "restore", "--transport",
                    test_transport(), "--quiet", "--metrics",
                    "127.0.0.1:" + std::to_string(client_metrics)});
  // The follower's series are labelled with the sidecar it follows.
  const std::string source = "{source=\"" + sidecar_host() + ":" + std::to_string(server.port()) +
                             "\"}";
  std::string last;
  ASSERT_TRUE(sample_becomes(
      client_metrics, "rrs_client_loaded_records_total", [](double v) { return v == 1700; }, last))
      << last << follower.describe();
  EXPECT_EQ(sample_value(last, "rrs_client_table_records"), 1700);
  EXPECT_EQ(sample_value(last, "rrs_client_fetched_records_total"), 1700);
  EXPECT_EQ(sample_value(last, "rrs_client_syncs_total"), 1);
  EXPECT_EQ(sample_value(last, "rrs_client_failed_records_total{reason=\"refused\"}"), 0);

  for (int i = 0; i < 50; ++i) master_.run({"SET", "f:" + std::to_string(i), "v"});
  ASSERT_TRUE(sample_becomes(
      client_metrics, "rrs_client_commands_applied_total", [](double v) { return v >= 50; }, last))
      << last << follower.describe();
  ASSERT_TRUE(sample_becomes(
      client_metrics, "rrs_client_follow_lag_bytes" + source, [](double v) { return v == 0; },
      last))
      << last;
  // The link's thread starts after the ready line.
  ASSERT_TRUE(sample_becomes(
      server_metrics, "rrs_server_master_link_up", [](double v) { return v == 1; }, last))
      << last;
  const std::string s = scrape(server_metrics);
  if (test_transport() == "tcp") {
    EXPECT_EQ(sample_value(s, "rrs_server_clients{transport=\"tcp\",state=\"authenticated\"}"), 1)
        << s;
    EXPECT_GT(sample_value(s, "rrs_server_reads_served_total{transport=\"tcp\"}").value_or(0), 0);
    EXPECT_GT(sample_value(s, "rrs_server_served_bytes_total{transport=\"tcp\"}").value_or(0), 0);
  } else {  // verbs READs never reach the server: the connection and its registration
    EXPECT_EQ(sample_value(s, "rrs_server_clients{transport=\"verbs\",state=\"connected\"}"), 1)
        << s;
    EXPECT_GE(sample_value(s, "rrs_server_verbs_registrations").value_or(0), 1) << s;
  }
  // What the link received is what the log holds, and what the follower applied.
  EXPECT_TRUE(eventually(
      [&] {
        last = scrape(server_metrics);
        auto end = sample_value(last, "rrs_server_change_log_offset_bytes{edge=\"end\"}");
        return end && *end > 0 && sample_value(last, "rrs_server_master_offset_bytes") == *end &&
               sample_value(scrape(client_metrics), "rrs_client_follow_offset_bytes" + source) ==
                   *end;
      },
      30s, 200ms))
      << last;
  EXPECT_EQ(follower.terminate(), 0) << follower.describe();
}

TEST_F(MetricsEndpointTest, RefusalsCountedByReason) {
  ASSERT_TRUE(master_.started()) << master_.start_error();
  const uint16_t port = free_loopback_port();
  SidecarServer server(master_.address(), {"--metrics", std::to_string(port)},
                       {{"RDMA_SIDECAR_SECRET", "0123456789abcdef0123456789abcdef"}});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun wrong = run_client({sidecar_host(), std::to_string(server.port()), "--redis",
                                master_.address(), "--no-load", "--transport", "tcp"},
                               {{"RDMA_SIDECAR_SECRET", "fedcba9876543210fedcba9876543210"}});
  EXPECT_NE(wrong.exit_code, 0) << wrong.describe();
  std::string last;
  EXPECT_TRUE(sample_becomes(
      port, "rrs_server_refusals_total{transport=\"tcp\",reason=\"authentication_failed\"}",
      [](double v) { return v >= 1; }, last))
      << last;
  // Neither wire is TLS here (tls_redis_test checks the 1s).
  EXPECT_EQ(sample_value(last, "rrs_server_tls{wire=\"table\"}"), 0) << last;
  EXPECT_EQ(sample_value(last, "rrs_server_tls{wire=\"redis\"}"), 0) << last;
}

TEST_F(MetricsEndpointTest, PortInUseIsRefusedAtStart) {
  ASSERT_TRUE(master_.started()) << master_.start_error();
  // The master's own port is taken.
  const std::string taken = std::to_string(master_.port());
  Process server({server_binary(), "--redis", master_.address(), "--port",
                  std::to_string(free_loopback_port()), "--metrics", taken});
  EXPECT_EQ(server.wait(30s), exit_code::kUsage) << server.describe();
  EXPECT_NE(server.stderr_text().find("in use"), std::string::npos) << server.describe();
  ClientRun client = run_client({"127.0.0.1", std::to_string(free_loopback_port()), "--redis",
                                 master_.address(), "--metrics", "127.0.0.1:" + taken});
  EXPECT_EQ(client.exit_code, exit_code::kUsage) << client.describe();
  EXPECT_NE(client.err.find("in use"), std::string::npos) << client.describe();
  ClientRun bad = run_client({"127.0.0.1", "1", "--metrics", "nine"});
  EXPECT_EQ(bad.exit_code, exit_code::kUsage) << bad.describe();
}

// The probes' answers before each program can do its job: the sidecar
// while it takes the first snapshot, a follower while its sidecar is not
// up yet. /healthz answers all along; /readyz is 503 with the reason, then
// 200 once the table is served and loaded.
TEST_F(MetricsEndpointTest, ReadyzIsNotReadyUntilServingAndLoaded) {
  ASSERT_TRUE(master_.started()) << master_.start_error();
  ASSERT_TRUE(replica_.started()) << replica_.start_error();
  fill_strings(master_, 0, "a:", 3000);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "1000"});  // ~3 s of snapshot
  const uint16_t sidecar_port = free_loopback_port();
  const uint16_t client_metrics = free_loopback_port();
  Process follower({client_binary(), sidecar_host(), std::to_string(sidecar_port), "--redis",
                    replica_.address(), "--follow", "--mode", "restore", "--transport",
                    test_transport(), "--quiet", "--connect-timeout", "60", "--metrics",
                    std::to_string(client_metrics)});
  HttpReply r;
  ASSERT_TRUE(
      eventually([&] { return (r = http_get(client_metrics, "/readyz")).status != 0; }, 30s, 100ms))
      << follower.describe();
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, "not ready: loading the first table\n");
  EXPECT_EQ(http_get(client_metrics, "/healthz").body, "ok\n");

  const uint16_t server_metrics = free_loopback_port();
  SidecarServer server(master_.address(), {"--port", std::to_string(sidecar_port), "--metrics",
                                           std::to_string(server_metrics)});
  ASSERT_TRUE(
      eventually([&] { return (r = http_get(server_metrics, "/readyz")).status != 0; }, 30s, 50ms))
      << server.describe();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.body, "not ready: taking the first snapshot\n");
  EXPECT_EQ(http_get(server_metrics, "/healthz").body, "ok\n");
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "0"});
  r = http_get(server_metrics, "/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.rfind("ready: serving epoch ", 0), 0u) << r.body;
  EXPECT_TRUE(eventually([&] { return (r = http_get(client_metrics, "/readyz")).status == 200; },
                         60s, 100ms))
      << follower.describe();
  EXPECT_EQ(r.body.rfind("ready: loaded epoch ", 0), 0u) << r.body;
  EXPECT_EQ(follower.terminate(), 0) << follower.describe();
}

// A sidecar that holds no table can answer a client only while it can reach
// the master: /readyz says when it cannot, and is ready again once it can.
TEST_F(MetricsEndpointTest, ReadyzIsNotReadyWhileTheMasterIsOutOfReachWithoutATable) {
  auto master = std::make_optional<RedisProcess>();
  ASSERT_TRUE(master->started()) << master->start_error();
  const uint16_t port = master->port();
  const uint16_t metrics_port = free_loopback_port();
  SidecarServer server(master->address(), {"--metrics", std::to_string(metrics_port)}, {},
                       FirstSnapshot::kOnDemand);
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  HttpReply r = http_get(metrics_port, "/readyz");
  EXPECT_EQ(r.body, "ready: no table yet: the first client's request takes one\n");

  master.reset();
  EXPECT_TRUE(
      eventually([&] { return (r = http_get(metrics_port, "/readyz")).status == 503; }, 30s, 100ms))
      << r.body << server.describe();
  EXPECT_EQ(r.body.rfind("not ready: the master is out of reach (", 0), 0u) << r.body;

  RedisOptions same_port;
  same_port.port = port;
  master.emplace(same_port);
  ASSERT_TRUE(master->started()) << master->start_error();
  EXPECT_TRUE(
      eventually([&] { return (r = http_get(metrics_port, "/readyz")).status == 200; }, 30s, 100ms))
      << r.body << server.describe();
  EXPECT_EQ(r.body, "ready: no table yet: the first client's request takes one\n");
}

}  // namespace
}  // namespace rrs::test
