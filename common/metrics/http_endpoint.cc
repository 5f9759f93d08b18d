#include "common/metrics/http_endpoint.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/base/log.h"
#include "common/metrics/readiness.h"

namespace rrs::metrics {
namespace {

// A scrape is one small request: a client that takes longer is dropped.
constexpr int kRequestTimeoutS = 10;

std::string bound_address(evutil_socket_t fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  port = ntohs(a->sin_port);
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace

Result<Endpoint> parse_metrics_address(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    auto port = parse_port(text);
    if (!port.ok())
      return Status::error("--metrics",
                           "expected PORT or ADDR:PORT, got '" + std::string(text) + "'");
    return Endpoint{"127.0.0.1", *port};
  }
  auto at = parse_endpoint(text);
  if (!at.ok())
    return Status::error("--metrics",
                         "expected PORT or ADDR:PORT, got '" + std::string(text) + "'");
  return *at;
}

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::start(const Endpoint& at,
                                                          const Registry& registry) {
  std::unique_ptr<HttpEndpoint> e(new HttpEndpoint(registry));
  RRS_RETURN_IF_ERROR(e->listen(at));
  RRS_ASSIGN_OR_RETURN(e->mailbox_, LoopMailbox::create(e->base_.get()));
  e->thread_ = std::thread([base = e->base_.get()] { event_base_dispatch(base); });
  log::info("metrics: http://" + e->address_ + "/metrics");
  return e;
}

Status HttpEndpoint::listen(const Endpoint& at) {
  const std::string step = "listen for metrics on " + at.to_string();
  base_ = {event_base_new(), event_base_free};
  if (!base_) return Status::error(step, "event_base_new failed");
  http_ = {evhttp_new(base_.get()), evhttp_free};
  if (!http_) return Status::error(step, "evhttp_new failed");
  evhttp_set_allowed_methods(http_.get(), EVHTTP_REQ_GET);
  evhttp_set_timeout(http_.get(), kRequestTimeoutS);
  evhttp_set_gencb(http_.get(), on_request, this);
  errno = 0;
  evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_.get(), at.host.c_str(),
                                                              at.port);
  if (!bound) {
    const int err = errno;
    if (err == EADDRINUSE)
      return Status::error(step, "the port is in use: pick another --metrics port", err)
          .as(ErrorKind::kUsage);
    return (err ? Status::from_errno(step, err)
                : Status::error(step, "cannot bind (is the address one of this host's?)"))
        .as(ErrorKind::kUsage);
  }
  address_ = bound_address(evhttp_bound_socket_get_fd(bound));
  return {};
}

// On the endpoint's thread: the registry's text for GET /metrics, the
// probes' answers for /healthz and /readyz, else 404.
void HttpEndpoint::on_request(evhttp_request* req, void* self) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const std::string_view path = uri && evhttp_uri_get_path(uri) ? evhttp_uri_get_path(uri) : "";
  int code = HTTP_OK;
  std::string text;
  const char* type = "text/plain; charset=utf-8";
  if (path == "/metrics") {
    text = static_cast<HttpEndpoint*>(self)->registry_.scrape();
    type = kContentType;
  } else if (path == "/healthz") {
    text = "ok\n";
  } else if (path == "/readyz") {
    const Readiness r = readiness();
    code = r.ready ? HTTP_OK : HTTP_SERVUNAVAIL;
    text = (r.ready ? "ready: " : "not ready: ") + r.why + "\n";
  } else {
    evhttp_send_error(req, HTTP_NOTFOUND, "only /metrics, /healthz and /readyz are served here");
    return;
  }
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, text.data(), text.size());
  evhttp_send_reply(req, code, code == HTTP_OK ? "OK" : "Service Unavailable", body);
  evbuffer_free(body);
}

HttpEndpoint::~HttpEndpoint() {
  if (thread_.joinable()) {
    mailbox_->post([base = base_.get()] { event_base_loopbreak(base); });
    thread_.join();
  }
}

}  // namespace rrs::metrics
