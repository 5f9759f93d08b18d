// Prometheus's text exposition format, version 0.0.4: pure functions from
// values to text, no I/O (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
//   # HELP rrs_server_reads_served_total READ requests answered (TCP).
//   # TYPE rrs_server_reads_served_total counter
//   rrs_server_reads_served_total{transport="tcp"} 42
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rrs::metrics {

enum class Type { kCounter, kGauge };

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;  // name, value
  double value = 0;
};

struct FamilySnapshot {
  std::string name, help;
  Type type = Type::kGauge;
  std::vector<Sample> samples;
};

// HELP and TYPE for every family, even one with no series yet, so a scrape
// right after start names every metric; then its samples.
std::string write_text(std::span<const FamilySnapshot> families);

// A sample value: whole numbers without exponent up to 2^53, "NaN", "+Inf",
// "-Inf" as the format spells them.
std::string format_value(double v);
// A label value between double quotes: backslash, quote and newline escaped.
std::string escape_label_value(std::string_view v);
// HELP text: backslash and newline escaped.
std::string escape_help(std::string_view v);
// [a-zA-Z_:][a-zA-Z0-9_:]*, the names the format allows (labels: no ':').
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

}  // namespace rrs::metrics
