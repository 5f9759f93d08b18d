#include "common/metrics/registry.h"

namespace rrs::metrics {

Family::Series& Family::series(const std::vector<std::string>& label_values) {
  // Caller holds mu_. A missing or extra value is a bug in the caller: the
  // series still gets made, under the label names there are.
  return series_[label_values];
}

Counter& Family::counter(const std::vector<std::string>& label_values) {
  std::lock_guard lock(mu_);
  Series& s = series(label_values);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Family::gauge(const std::vector<std::string>& label_values) {
  std::lock_guard lock(mu_);
  Series& s = series(label_values);
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

void Family::gauge_fn(const std::vector<std::string>& label_values, std::function<double()> read) {
  std::lock_guard lock(mu_);
  series(label_values).read = std::move(read);
}

FamilySnapshot Family::snapshot() const {
  FamilySnapshot out{name_, help_, type_, {}};
  std::lock_guard lock(mu_);
  for (const auto& [values, s] : series_) {
    Sample sample;
    for (size_t i = 0; i < label_names_.size() && i < values.size(); ++i)
      sample.labels.emplace_back(label_names_[i], values[i]);
    if (s.read)
      sample.value = s.read();
    else if (s.counter)
      sample.value = static_cast<double>(s.counter->value());
    else if (s.gauge)
      sample.value = s.gauge->value();
    out.samples.push_back(std::move(sample));
  }
  return out;
}

Family& Registry::family(const std::string& name, const std::string& help, Type type,
                         std::vector<std::string> label_names) {
  std::lock_guard lock(mu_);
  auto& f = families_[name];
  if (!f) f = std::make_unique<Family>(name, help, type, std::move(label_names));
  return *f;
}

Family& Registry::counters(const std::string& name, const std::string& help,
                           std::vector<std::string> label_names) {
  return family(name, help, Type::kCounter, std::move(label_names));
}

Family& Registry::gauges(const std::string& name, const std::string& help,
                         std::vector<std::string> label_names) {
  return family(name, help, Type::kGauge, std::move(label_names));
}

std::vector<FamilySnapshot> Registry::snapshot() const {
  std::vector<FamilySnapshot> out;
  std::lock_guard lock(mu_);
  out.reserve(families_.size());
  for (const auto& [name, f] : families_) out.push_back(f->snapshot());
  return out;
}

Registry& global() {
  static Registry registry;
  return registry;
}

}  // namespace rrs::metrics
