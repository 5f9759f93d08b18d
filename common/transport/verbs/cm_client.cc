#include "common/transport/verbs/cm_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>

#include "common/transport/control_session.h"
#include "common/transport/verbs/queue_depths.h"

namespace rrs::verbs {
namespace {

std::span<const std::byte> private_data(const rdma_cm_event& ev) {
  if (!ev.param.conn.private_data) return {};
  return {static_cast<const std::byte*>(ev.param.conn.private_data),
          ev.param.conn.private_data_len};
}

// Every CM step of a connect ends by the caller's one deadline (the caller
// gives a first attempt at least kResolveTimeoutMs).
std::chrono::milliseconds time_left(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(0));
}

// Why an unexpected CM event ended a step. kUnavailable (tried again until
// the deadline) unless the server's ERROR says retrying cannot help.
Status unexpected_event(rdma_cm_event_type want, const rdma_cm_event& ev) {
  std::string why = std::string(rdma_event_str(ev.event)) + " (status " +
                    std::to_string(ev.status) + ")";
  switch (ev.event) {
    case RDMA_CM_EVENT_REJECTED:
      if (auto err = control::decode_reject(private_data(ev)); err.ok())
        return ClientSession::server_error(*err);  // the server answered
      why += ": nothing is listening for RDMA connections on that port";
      break;
    // A host that is down (no ARP answer) shows as an address error too.
    case RDMA_CM_EVENT_ADDR_ERROR: why += ": no RDMA device can reach that address"; break;
    case RDMA_CM_EVENT_ROUTE_ERROR: why += ": no route to that address over RDMA"; break;
    default: break;
  }
  return Status::error(std::string("wait for ") + rdma_event_str(want), why)
      .as(ErrorKind::kUnavailable);
}

}  // namespace

Result<CmEvent> CmClient::wait_event(rdma_cm_event_type want, Clock::time_point deadline) {
  pollfd p{channel_->fd, POLLIN, 0};
  const auto wait = std::min<int64_t>(time_left(deadline).count(), int64_t{3600} * 1000);
  if (::poll(&p, 1, static_cast<int>(wait)) <= 0)
    return Status::error(std::string("wait for ") + rdma_event_str(want), "timed out", ETIMEDOUT)
        .as(ErrorKind::kUnavailable);
  rdma_cm_event* raw = nullptr;
  if (rdma_get_cm_event(channel_.get(), &raw) != 0)
    return Status::from_errno("rdma_get_cm_event").as(ErrorKind::kUnavailable);
  CmEvent ev(raw);
  if (ev->event == want) return ev;
  return unexpected_event(want, *ev);
}

Status CmClient::resolve(const Endpoint& server, Clock::time_point deadline) {
  reset();
  channel_.reset(rdma_create_event_channel());
  if (!channel_) return Status::from_errno("rdma_create_event_channel");
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel_.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    return Status::from_errno("rdma_create_id");
  id_.reset(id);

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(server.port);
  if (int rc = getaddrinfo(server.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return Status::error("resolve " + server.host, gai_strerror(rc));
  int rc = rdma_resolve_addr(id, nullptr, res->ai_addr, kResolveTimeoutMs);
  freeaddrinfo(res);
  if (rc != 0) return Status::from_errno("rdma_resolve_addr").as(ErrorKind::kUnavailable);
  if (auto ev = wait_event(RDMA_CM_EVENT_ADDR_RESOLVED, deadline); !ev.ok()) return ev.status();
  if (rdma_resolve_route(id, kResolveTimeoutMs) != 0)
    return Status::from_errno("rdma_resolve_route").as(ErrorKind::kUnavailable);
  if (auto ev = wait_event(RDMA_CM_EVENT_ROUTE_RESOLVED, deadline); !ev.ok()) return ev.status();
  return {};
}

Result<CmEvent> CmClient::connect(rdma_conn_param& param, Clock::time_point deadline) {
  if (rdma_connect(id_.get(), &param) != 0)
    return Status::from_errno("rdma_connect").as(ErrorKind::kUnavailable);
  return wait_event(RDMA_CM_EVENT_ESTABLISHED, deadline);
}

Status CmClient::check_events() {
  rdma_cm_event* raw = nullptr;
  while (rdma_get_cm_event(channel_.get(), &raw) == 0) {
    CmEvent ev(raw);
    // Once established, any of these means the connection is gone (a
    // REJECTED here is the peer's CM refusing a connection it forgot).
    const auto e = ev->event;
    if (e == RDMA_CM_EVENT_DISCONNECTED || e == RDMA_CM_EVENT_DEVICE_REMOVAL ||
        e == RDMA_CM_EVENT_REJECTED || e == RDMA_CM_EVENT_CONNECT_ERROR ||
        e == RDMA_CM_EVENT_UNREACHABLE)
      return Status::error("read from rdma-server",
                           std::string("connection lost: ") + rdma_event_str(e))
          .as(ErrorKind::kUnavailable);
  }
  return {};
}

void CmClient::reset() {
  id_.reset();
  channel_.reset();
}

}  // namespace rrs::verbs
