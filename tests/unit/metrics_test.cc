// The metrics registry and Prometheus's text exposition (common/metrics/):
// HELP and TYPE lines, label escaping, values as the format spells them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "common/metrics/exposition.h"
#include "common/metrics/http_endpoint.h"
#include "common/metrics/registry.h"

using namespace rrs;
using namespace rrs::metrics;

TEST(Exposition, HelpTypeAndSamples) {
  std::vector<FamilySnapshot> f = {
      {"rrs_x_total", "Things done.", Type::kCounter, {{{}, 3}}},
      {"rrs_y", "A level.", Type::kGauge, {{{{"db", "0"}}, 1.5}, {{{"db", "3"}}, 0}}},
  };
  EXPECT_EQ(write_text(f), "# HELP rrs_x_total Things done.\n"
                           "# TYPE rrs_x_total counter\n"
                           "rrs_x_total 3\n"
                           "# HELP rrs_y A level.\n"
                           "# TYPE rrs_y gauge\n"
                           "rrs_y{db=\"0\"} 1.5\n"
                           "rrs_y{db=\"3\"} 0\n");
}

TEST(Exposition, FamilyWithoutSeriesStillNamed) {
  std::vector<FamilySnapshot> f = {{"rrs_z_total", "None yet.", Type::kCounter, {}}};
  EXPECT_EQ(write_text(f), "# HELP rrs_z_total None yet.\n# TYPE rrs_z_total counter\n");
}

TEST(Exposition, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape_help("line\\one\nline \"two\""), "line\\\\one\\nline \"two\"");
  std::vector<FamilySnapshot> f = {
      {"m", "h\nx", Type::kGauge, {{{{"reason", "say \"no\""}, {"b", "\\"}}, 1}}}};
  EXPECT_EQ(write_text(f),
            "# HELP m h\\nx\n# TYPE m gauge\nm{reason=\"say \\\"no\\\"\",b=\"\\\\\"} 1\n");
}

TEST(Exposition, ValuesAsTheFormatSpellsThem) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(-0.0), "-0");
  EXPECT_EQ(format_value(42), "42");
  EXPECT_EQ(format_value(1764124800123.0), "1764124800123");  // an epoch in ms, no exponent
  EXPECT_EQ(format_value(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(format_value(0.25), "0.25");
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_DOUBLE_EQ(std::stod(format_value(0.1)), 0.1);
  EXPECT_DOUBLE_EQ(std::stod(format_value(1e300)), 1e300);
}

TEST(Exposition, Names) {
  EXPECT_TRUE(valid_metric_name("rrs_server_reads_served_total"));
  EXPECT_TRUE(valid_metric_name("a:b_c1"));
  EXPECT_FALSE(valid_metric_name("1abc"));
  EXPECT_FALSE(valid_metric_name("a-b"));
  EXPECT_FALSE(valid_metric_name(""));
  EXPECT_TRUE(valid_label_name("transport"));
  EXPECT_FALSE(valid_label_name("a:b"));
}

TEST(Registry, CountersGaugesAndCallbacks) {
  Registry r;
  Counter& reads = r.counters("t_reads_total", "Reads.", {"transport"}).counter({"tcp"});
  reads.add();
  reads.add(4);
  Gauge& lag = r.gauge("t_lag_seconds", "Lag.");
  lag.set(2);
  lag.add(-0.5);
  r.gauges("t_fn", "Read at scrape.", {"edge"}).gauge_fn({"end"}, [] { return 7.0; });
  r.counters("t_none_total", "Nothing yet.", {"kind"});
  EXPECT_EQ(r.scrape(), "# HELP t_fn Read at scrape.\n# TYPE t_fn gauge\nt_fn{edge=\"end\"} 7\n"
                        "# HELP t_lag_seconds Lag.\n# TYPE t_lag_seconds gauge\nt_lag_seconds 1.5\n"
                        "# HELP t_none_total Nothing yet.\n# TYPE t_none_total counter\n"
                        "# HELP t_reads_total Reads.\n# TYPE t_reads_total counter\n"
                        "t_reads_total{transport=\"tcp\"} 5\n");
}

TEST(Registry, SameSeriesForSameLabels) {
  Registry r;
  Family& f = r.counters("t_total", "T.", {"a"});
  EXPECT_EQ(&f, &r.counters("t_total", "ignored", {"a"}));
  EXPECT_EQ(&f.counter({"x"}), &f.counter({"x"}));
  EXPECT_NE(&f.counter({"x"}), &f.counter({"y"}));
}

TEST(Registry, ConcurrentAddsAreAllCounted) {
  Registry r;
  Counter& c = r.counter("t_adds_total", "Adds.");
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) c.add();
    });
  for (int i = 0; i < 100; ++i) (void)r.scrape();  // scrapes meanwhile are fine
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 400000u);
}

TEST(MetricsFlag, PortAloneIsLoopback) {
  auto a = parse_metrics_address("9100");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9100);
  auto b = parse_metrics_address("0.0.0.0:9101");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "0.0.0.0");
  EXPECT_FALSE(parse_metrics_address("nine").ok());
  EXPECT_FALSE(parse_metrics_address("127.0.0.1:").ok());
  EXPECT_FALSE(parse_metrics_address("70000").ok());
}
