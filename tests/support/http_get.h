// A plain HTTP/1.0 GET to a loopback port, for tests of the /metrics
// endpoints and of Prometheus's API: no library, every wait bounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace rrs::test {

struct HttpReply {
  int status = 0;       // 0: no answer (refused, timed out, not HTTP)
  std::string headers;  // the header block, as sent
  std::string body;
};

// GET `target` ("/metrics", "/api/v1/query?query=up") from 127.0.0.1:`port`.
HttpReply http_get(uint16_t port, const std::string& target,
                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

// The value of the sample `series` (name and labels exactly as the
// exposition writes them, e.g. `rrs_server_table_records{db="0"}`) in a
// /metrics text; nullopt when absent.
std::optional<double> sample_value(const std::string& text, const std::string& series);

// Percent-encoding for a query string's value (PromQL has {}", spaces).
std::string url_encode(const std::string& s);

}  // namespace rrs::test
