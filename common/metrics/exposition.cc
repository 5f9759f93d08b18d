#include "common/metrics/exposition.h"

#include <cmath>
#include <cstdio>

namespace rrs::metrics {
namespace {

bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return alpha || (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, colon)) return false;
  return true;
}

std::string escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  // Whole numbers exactly (byte counts, offsets, epochs); %.17g round-trips
  // any other double.
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string escape_label_value(std::string_view v) { return escape(v, true); }
std::string escape_help(std::string_view v) { return escape(v, false); }
bool valid_metric_name(std::string_view name) { return valid_name(name, true); }
bool valid_label_name(std::string_view name) { return valid_name(name, false); }

std::string write_text(std::span<const FamilySnapshot> families) {
  std::string out;
  for (const FamilySnapshot& f : families) {
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + (f.type == Type::kCounter ? " counter\n" : " gauge\n");
    for (const Sample& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < s.labels.size(); ++i)
          out += (i ? "," : "") + s.labels[i].first + "=\"" +
                 escape_label_value(s.labels[i].second) + "\"";
        out += '}';
      }
      out += " " + format_value(s.value) + "\n";
    }
  }
  return out;
}

}  // namespace rrs::metrics
