#include "common/transport/verbs/device.h"

#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <netdb.h>

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
      uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      return caps & (1ull << 14);
    }
  }
  return false;
}

}  // namespace

bool rdma_device_active(std::string& why) {
  int n = 0;
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> list(ibv_get_device_list(&n),
                                                            ibv_free_device_list);
  if (!list || n == 0) {
    why = "no RDMA devices";
    return false;
  }
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
          why = std::string(name) + " port " + std::to_string(port) + " is active";
          ibv_close_device(ctx);
          return true;
        }
      }
    }
    ibv_close_device(ctx);
    seen += (seen.empty() ? "" : ", ") + std::string(name);
  }
  why = "RDMA devices (" + seen + ") have no active port";
  return false;
}

bool rdma_can_reach(const std::string& host, uint16_t port, std::string& why) {
  if (!rdma_device_active(why)) return false;
  verbs::EventChannel channel(rdma_create_event_channel());
  if (!channel) {
    why = "rdma_create_event_channel failed: " + std::string(std::strerror(errno));
    return false;
  }
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    why = "rdma_create_id failed: " + std::string(std::strerror(errno));
    return false;
  }
  verbs::CmId id(raw);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string p = std::to_string(port);
  if (getaddrinfo(host.c_str(), p.c_str(), &hints, &res) != 0) {
    why = "cannot resolve " + host;
    return false;
  }
  int rc = rdma_resolve_addr(raw, nullptr, res->ai_addr, 1000);
  freeaddrinfo(res);
  auto next = [&](rdma_cm_event_type want) {
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(channel.get(), &ev) != 0) return false;
    verbs::CmEvent owned(ev);
    return ev->event == want;
  };
  if (rc != 0 || !next(RDMA_CM_EVENT_ADDR_RESOLVED)) {
    why = "no RDMA device reaches " + host;
    return false;
  }
  if (rdma_resolve_route(raw, 1000) != 0 || !next(RDMA_CM_EVENT_ROUTE_RESOLVED)) {
    why = "no RDMA route to " + host;
    return false;
  }
  why = "RDMA device " + std::string(ibv_get_device_name(raw->verbs->device)) + " reaches " + host;
  return true;
}

Status check_memlock(uint64_t bytes) {
  rlimit lim{};
  if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) return Status::from_errno("getrlimit(RLIMIT_MEMLOCK)");
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= bytes || has_ipc_lock()) return {};
  return Status::error(
      "check locked-memory limit",
      "registering the table pins " + std::to_string(bytes >> 20) +
          " MiB but RLIMIT_MEMLOCK allows " + std::to_string(lim.rlim_cur >> 20) +
          " MiB; raise it (`ulimit -l unlimited` in the shell, LimitMEMLOCK=infinity in a "
          "systemd unit, or memlock in /etc/security/limits.conf) or use --transport tcp");
}

}  // namespace rrs
