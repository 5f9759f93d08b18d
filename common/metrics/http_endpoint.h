// The metrics port: libevent's HTTP server (evhttp) on a thread of its own,
// with its own event_base. GET /metrics answers with the registry's text,
// GET /healthz with 200 "ok" (the process is up), GET /readyz with 200
// "ready: ..." or 503 "not ready: ..." (readiness.h); 404 for any other path. A thread of its own,
// not rdma-server's loop, because that loop does not run until the first table is published: a
// scrape must be answered during a first snapshot of hours too.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/base/status.h"
#include "common/metrics/registry.h"
#include "common/net/endpoint.h"
#include "common/net/loop_mailbox.h"

struct event_base;
struct evhttp;
struct evhttp_request;

namespace rrs::metrics {

// --metrics ADDR:PORT, or PORT alone for loopback (127.0.0.1:PORT).
Result<Endpoint> parse_metrics_address(std::string_view text);

class HttpEndpoint {
 public:
  // Listens at `at` (port 0: any free one) and serves until destroyed. A
  // port already taken is kUsage: the flag asks for what cannot work, and
  // no retry will fix it.
  static Result<std::unique_ptr<HttpEndpoint>> start(const Endpoint& at, const Registry& registry);
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;
  ~HttpEndpoint();  // stops and joins the thread

  // "ADDR:PORT" it is bound to.
  const std::string& address() const { return address_; }

 private:
  explicit HttpEndpoint(const Registry& registry) : registry_(registry) {}
  Status listen(const Endpoint& at);
  static void on_request(evhttp_request* req, void* self);

  const Registry& registry_;
  std::unique_ptr<event_base, void (*)(event_base*)> base_{nullptr, nullptr};
  std::unique_ptr<evhttp, void (*)(evhttp*)> http_{nullptr, nullptr};
  std::unique_ptr<LoopMailbox> mailbox_;  // how the destructor stops the loop
  std::string address_;
  std::thread thread_;
};

}  // namespace rrs::metrics
