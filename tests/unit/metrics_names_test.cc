// The names both programs export (every metric is registered at start, so
// the registry lists them all): Prometheus's conventions, every one in
// docs/metrics.md, and the Grafana dashboard (contrib/grafana/) references
// none that is not exported.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "client/client_metrics.h"
#include "common/metrics/registry.h"
#include "common/transport/serving_metrics.h"
#include "server/server_metrics.h"

using namespace rrs;

namespace {

std::string read(const std::string& relative) {
  std::ifstream in(std::string(RRS_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<metrics::FamilySnapshot> exported() {
  server_metrics();
  client_metrics();
  return metrics::global().snapshot();
}

std::set<std::string> names() {
  std::set<std::string> out;
  for (const auto& f : exported()) out.insert(f.name);
  return out;
}

}  // namespace

TEST(MetricNames, FollowPrometheusConventions) {
  const auto families = exported();
  EXPECT_GT(families.size(), 30u);
  for (const auto& f : families) {
    EXPECT_TRUE(metrics::valid_metric_name(f.name)) << f.name;
    EXPECT_TRUE(f.name.rfind("rrs_server_", 0) == 0 || f.name.rfind("rrs_client_", 0) == 0)
        << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    const bool total = f.name.size() > 6 && f.name.ends_with("_total");
    EXPECT_EQ(total, f.type == metrics::Type::kCounter) << f.name << ": counters end in _total";
    for (const char* unit : {"milliseconds", "_ms", "kilobytes", "megabytes"})
      EXPECT_EQ(f.name.find(unit), std::string::npos) << f.name << ": base units only";
  }
}

TEST(MetricNames, EveryOneIsDocumented) {
  const std::string doc = read("docs/metrics.md");
  ASSERT_FALSE(doc.empty());
  for (const std::string& name : names())
    EXPECT_NE(doc.find("`" + name), std::string::npos) << name << " is not in docs/metrics.md";
}

TEST(MetricNames, GrafanaDashboardReferencesOnlyExportedNames) {
  const std::string dashboard = read("contrib/grafana/rdma-sidecar.json");
  ASSERT_FALSE(dashboard.empty());
  const std::set<std::string> known = names();
  static const std::regex name(R"(rrs_(server|client)_[a-z0-9_]+)");
  size_t seen = 0;
  for (std::sregex_iterator it(dashboard.begin(), dashboard.end(), name), end; it != end; ++it) {
    ++seen;
    EXPECT_TRUE(known.count(it->str())) << it->str() << " is not exported by either program";
  }
  EXPECT_GT(seen, 15u);
}
