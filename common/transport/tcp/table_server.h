// TableServer over TCP, driven by a libevent loop (the caller's event_base;
// every method runs on that loop's thread). Each client speaks the control
// protocol: HELLO, AUTH (when the server has a secret), GET_DESCRIPTOR, then
// any number of READs, answered from the published table without copying it
// (evbuffer references).
#pragma once

#include <event2/event.h>
#include <event2/listener.h>

#include <memory>
#include <unordered_set>

#include "common/net/endpoint.h"
#include "common/transport/control_session.h"
#include "common/transport/transport.h"

namespace rrs {

struct TcpServerLimits {
  // Reads a client may have queued before we stop reading its requests.
  uint32_t max_in_flight = 16;
  // Bytes queued for one client before we stop reading its requests: bounds
  // what a client that never reads can make us hold.
  size_t max_queued_bytes = 64u << 20;
  AccessPolicy access;
};

class TcpTableServer final : public TableServer {
 public:
  static Result<std::unique_ptr<TcpTableServer>> listen(event_base* base, const Endpoint& at,
                                                        const TcpServerLimits& limits = {});
  // Closes every connection. libevent finishes freeing them on the loop's
  // next turn: the owner should run it once more (EVLOOP_NONBLOCK).
  ~TcpTableServer() override;

  Status publish(TablePtr table) override;
  std::string address() const override { return bound_.to_string(); }
  void disconnect_all() override;
  uint16_t port() const { return bound_.port; }
  size_t client_count() const override { return clients_.size(); }

  class Client;  // one connection; defined in the .cc

 private:
  TcpTableServer(event_base* base, const TcpServerLimits& limits)
      : base_(base), limits_(limits), terms_{limits.access, limits.max_in_flight} {}
  static void on_accept(evconnlistener*, evutil_socket_t fd, sockaddr* addr, int len, void* arg);
  void drop(Client* c);

  friend class Client;
  event_base* base_;
  TcpServerLimits limits_;
  ServerTerms terms_;  // what every client's ServerSession offers
  Endpoint bound_;
  std::unique_ptr<evconnlistener, void (*)(evconnlistener*)> listener_{nullptr,
                                                                       evconnlistener_free};
  TablePtr table_;
  std::unordered_set<Client*> clients_;
};

}  // namespace rrs
