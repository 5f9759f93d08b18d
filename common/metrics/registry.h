// A process's metrics: counters and gauges registered once, at start, under
// Prometheus names, and read by the /metrics endpoint (http_endpoint.h).
//
// Updating is one relaxed atomic operation on a value whose address the
// caller keeps, so the transports' and the fetcher's hot paths pay nothing
// more; the registry's mutex is taken only to register and to scrape.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics/exposition.h"

namespace rrs::metrics {

// A count that only goes up (Prometheus counter). Any thread.
class Counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A value that goes up and down (Prometheus gauge). Any thread.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double d) {
    double old = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(old, old + d, std::memory_order_relaxed)) {
    }
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// One metric name and its series, one per set of label values. The label
// names are fixed when the family is registered; each series is made once
// (at start where its labels are known then) and kept: the references
// returned stay valid as long as the registry.
class Family {
 public:
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(label_names)) {}

  // The series with these label values (one per label name, in order),
  // made on first use. Counter families only, and gauge families only.
  Counter& counter(const std::vector<std::string>& label_values = {});
  Gauge& gauge(const std::vector<std::string>& label_values = {});
  // A counter of a fractional amount (seconds) in a counter family: a Gauge
  // only ever add()ed to. Its add is a CAS loop: for rare events only.
  Gauge& fractional_counter(const std::vector<std::string>& label_values = {}) {
    return gauge(label_values);
  }
  // A gauge series whose value `read` gives at each scrape, on the scrape's
  // thread: it must be safe to call from any thread.
  void gauge_fn(const std::vector<std::string>& label_values, std::function<double()> read);

  const std::string& name() const { return name_; }
  FamilySnapshot snapshot() const;

 private:
  struct Series {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::function<double()> read;
  };
  Series& series(const std::vector<std::string>& label_values);

  std::string name_, help_;
  Type type_;
  std::vector<std::string> label_names_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, Series> series_;  // sorted: stable output
};

class Registry {
 public:
  // The family `name` (registered on first call; a later call must agree).
  Family& counters(const std::string& name, const std::string& help,
                   std::vector<std::string> label_names = {});
  Family& gauges(const std::string& name, const std::string& help,
                 std::vector<std::string> label_names = {});
  // Unlabelled shorthands.
  Counter& counter(const std::string& name, const std::string& help) {
    return counters(name, help).counter();
  }
  Gauge& gauge(const std::string& name, const std::string& help) {
    return gauges(name, help).gauge();
  }

  // Every family, in name order, as the exposition writer takes it.
  std::vector<FamilySnapshot> snapshot() const;
  // The text a scrape of /metrics answers.
  std::string scrape() const { return write_text(snapshot()); }

 private:
  Family& family(const std::string& name, const std::string& help, Type type,
                 std::vector<std::string> label_names);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
};

// The process's registry: the programs register into it at start and the
// layers below update what they registered.
Registry& global();

}  // namespace rrs::metrics
