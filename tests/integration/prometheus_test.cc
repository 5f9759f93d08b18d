// A real Prometheus (Debian's `prometheus` package), started by the test with
// a config of its own, scrapes rdma-server and an rdma-client --follow every
// second through a sync and a follow; the test then asks Prometheus's HTTP
// API for the values it must have stored. Skipped without the binary, except
// under CI=true, where tests/install-deps.sh installs it: there it fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#include "tests/support/dataset.h"
#include "tests/support/eventually.h"
#include "tests/support/http_get.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

std::string find_prometheus() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (access((dir + "/prometheus").c_str(), X_OK) == 0) return dir + "/prometheus";
  return "";
}

std::string scrape_config(uint16_t server, uint16_t client) {
  auto job = [](const char* name, uint16_t port) {
    return std::string("  - job_name: ") + name +
           "\n    static_configs:\n      - targets: ['127.0.0.1:" + std::to_string(port) + "']\n";
  };
  return "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" +
         job("rdma-server", server) + job("rdma-client", client);
}

// The first sample's value of an instant query, or nullopt (no result yet).
std::optional<double> query(uint16_t prometheus, const std::string& promql) {
  const HttpReply r = http_get(prometheus, "/api/v1/query?query=" + url_encode(promql));
  static const std::regex value(R"re("value":\[[0-9.e+]+,"([^"]+)"\])re");
  std::smatch m;
  if (r.status != 200 || !std::regex_search(r.body, m, value)) return std::nullopt;
  return std::strtod(m[1].str().c_str(), nullptr);
}

class PrometheusTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    binary_ = find_prometheus();
    if (binary_.empty()) {
      if (servers_required()) FAIL() << "CI=true and no prometheus binary (tests/install-deps.sh)";
      GTEST_SKIP() << "no prometheus binary (apt-get install prometheus)";
    }
  }
  std::string binary_;
};

TEST_F(PrometheusTest, ScrapesBothProgramsThroughSyncAndFollow) {
  RedisProcess master, replica;
  ASSERT_TRUE(master.started()) << master.start_error();
  ASSERT_TRUE(replica.started()) << replica.start_error();
  fill_strings(master, 0, "k:", 3000, 200);
  const uint16_t server_port = free_loopback_port(), client_port = free_loopback_port(),
                 prom_port = free_loopback_port();
  TempDir dir("prometheus");
  const std::string config = dir.write_file("prometheus.yml",
                                            scrape_config(server_port, client_port));
  Process prometheus({binary_, "--config.file=" + config, "--storage.tsdb.path=" + dir.file("data"),
                      "--web.listen-address=127.0.0.1:" + std::to_string(prom_port),
                      "--log.level=warn"});
  ASSERT_TRUE(eventually([&] { return http_get(prom_port, "/-/ready").status == 200; }, 60s, 200ms))
      << prometheus.describe();

  SidecarServer server(master.address(), {"--metrics", std::to_string(server_port)});
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  Process follower({client_binary(), sidecar_host(), std::to_string(server.port()), "--redis",
                    replica.address(), "--follow", "--mode", "restore", "--transport",
                    test_transport(), "--quiet", "--metrics", std::to_string(client_port)});
  auto stored = [&](const std::string& promql, double want) {
    std::optional<double> got;
    const bool ok = eventually(
        [&] {
          got = query(prom_port, promql);
          return got == want;
        },
        60s, 500ms);
    EXPECT_TRUE(ok) << promql << " = " << (got ? std::to_string(*got) : "none") << ", want " << want
                    << "\n"
                    << follower.describe() << prometheus.describe();
  };
  stored("up{job=\"rdma-server\"}", 1);
  stored("up{job=\"rdma-client\"}", 1);
  stored("rrs_client_loaded_records_total", 3000);
  stored("rrs_client_fetched_records_total", 3000);
  stored("rrs_server_table_records{db=\"0\"}", 3000);
  stored("rrs_server_snapshots_total", 1);
  stored("rrs_server_clients{transport=\"tcp\",state=\"authenticated\"}", 1);

  for (int i = 0; i < 40; ++i) master.run({"SET", "w:" + std::to_string(i), "v"});
  stored("rrs_client_commands_applied_total >= bool 40", 1);
  stored("rrs_client_follow_lag_bytes", 0);
  // The follower applied what the sidecar's log holds.
  stored("rrs_client_follow_offset_bytes == bool on() "
         "rrs_server_change_log_offset_bytes{edge=\"end\"}",
         1);
  EXPECT_EQ(follower.terminate(), 0) << follower.describe();
  prometheus.terminate();
}

}  // namespace
}  // namespace rrs::test
