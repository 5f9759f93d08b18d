#include "common/transport/verbs/device.h"

#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <netdb.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/transport/verbs/owners.h"

namespace rrs {
namespace {

// CAP_IPC_LOCK (bit 14) in the effective set lifts RLIMIT_MEMLOCK.
bool has_ipc_lock() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::string_view hex(line);
      hex.remove_prefix(7);
      while (!hex.empty() && (hex.front() == ' ' || hex.front() == '\t')) hex.remove_prefix(1);
      uint64_t caps = 0;
      auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), caps, 16);
      return ec == std::errc() && (caps & (1ull << 14)) != 0;
    }
  }
  return false;
}

}  // namespace

Result<std::string> rdma_device_active() {
  const std::string step = "find an active RDMA port";
  int n = 0;
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> list(ibv_get_device_list(&n),
                                                            ibv_free_device_list);
  if (!list || n == 0) return Status::error(step, "no RDMA devices").as(ErrorKind::kUnavailable);
  std::string seen;
  for (int i = 0; i < n; ++i) {
    const char* name = ibv_get_device_name(list.get()[i]);
    ibv_context* ctx = ibv_open_device(list.get()[i]);
    if (!ctx) continue;
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) == 0) {
      for (uint8_t port = 1; port <= attr.phys_port_cnt; ++port) {
        ibv_port_attr pa{};
        if (ibv_query_port(ctx, port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
          ibv_close_device(ctx);
          return std::string(name) + " port " + std::to_string(port) + " is active";
        }
      }
    }
    ibv_close_device(ctx);
    seen += (seen.empty() ? "" : ", ") + std::string(name);
  }
  return Status::error(step, "RDMA devices (" + seen + ") have no active port")
      .as(ErrorKind::kUnavailable);
}

Result<std::string> rdma_can_reach(const std::string& host, uint16_t port) {
  RRS_RETURN_IF_ERROR(rdma_device_active().status());
  const std::string step = "reach " + host + " over RDMA";
  const auto no = [&](const std::string& why) {
    return Status::error(step, why).as(ErrorKind::kUnavailable);
  };
  verbs::EventChannel channel(rdma_create_event_channel());
  if (!channel) return no("rdma_create_event_channel failed: " + std::string(std::strerror(errno)));
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0)
    return no("rdma_create_id failed: " + std::string(std::strerror(errno)));
  verbs::CmId id(raw);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string p = std::to_string(port);
  if (getaddrinfo(host.c_str(), p.c_str(), &hints, &res) != 0) return no("cannot resolve " + host);
  int rc = rdma_resolve_addr(raw, nullptr, res->ai_addr, 1000);
  freeaddrinfo(res);
  auto next = [&](rdma_cm_event_type want) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(channel.get(), &ev) != 0) return false;
    verbs::CmEvent owned(ev);
    return ev->event == want;
  };
  if (rc != 0 || !next(RDMA_CM_EVENT_ADDR_RESOLVED)) return no("no RDMA device reaches " + host);
  if (rdma_resolve_route(raw, 1000) != 0 || !next(RDMA_CM_EVENT_ROUTE_RESOLVED))
    return no("no RDMA route to " + host);
  return "RDMA device " + std::string(ibv_get_device_name(raw->verbs->device)) + " reaches " + host;
}

Status check_memlock(uint64_t bytes, uint64_t limit_for_test) {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return Status::from_errno("getrlimit(RLIMIT_MEMLOCK)");
  if (limit_for_test != 0) {
    if (limit_for_test >= bytes) return {};
    lim.rlim_cur = limit_for_test;
  } else if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= bytes || has_ipc_lock()) {
    return {};
  }
  return Status::error(
      "check locked-memory limit",
      "registering the table pins " + std::to_string(bytes >> 20) +
          " MiB but RLIMIT_MEMLOCK allows " + std::to_string(lim.rlim_cur >> 20) +
          " MiB; raise it (`ulimit -l unlimited` in the shell, LimitMEMLOCK=infinity in a "
          "systemd unit, or memlock in /etc/security/limits.conf) or use --transport tcp");
}

std::string rdma_availability() {
  auto device = rdma_device_active();
  return device.ok() ? *device : device.status().reason() + " (TCP only)";
}

}  // namespace rrs
