// A TableServer on a libevent loop of its own thread, for tests that run a
// server and its clients in one process; and whether verbs tests can run
// here at all.
#pragma once

#include <event2/event.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "common/base/status.h"
#include "common/transport/transport.h"

namespace rrs::test {

// The address on the RDMA device verbs tests use (RRS_VERBS_ADDR, which
// tests/vm/guest-setup.sh exports), or "".
std::string verbs_address();
// Why verbs tests cannot run here, or "" when they can.
std::string verbs_unusable();

// Skips the test when there is no RDMA device with an address on it (fails
// instead under RRS_REQUIRE_VERBS=1, as in the VM, so a broken setup is seen).
#define RRS_SKIP_WITHOUT_VERBS()                                                                   \
  do {                                                                                             \
    if (const std::string rrs_why_ = ::rrs::test::verbs_unusable(); !rrs_why_.empty()) {           \
      if (std::getenv("RRS_REQUIRE_VERBS")) FAIL() << "RRS_REQUIRE_VERBS is set but " << rrs_why_; \
      GTEST_SKIP() << "verbs: " << rrs_why_                                                        \
                   << " (the Soft-RoCE suite runs these: bash tests/vm/run-in-vm.sh)";             \
    }                                                                                              \
  } while (0)

// start() and the destructor run on the test's thread; the server itself is
// touched only on the loop thread, through on_loop().
class ServerLoop {
 public:
  ServerLoop() = default;
  ServerLoop(const ServerLoop&) = delete;
  ServerLoop& operator=(const ServerLoop&) = delete;
  ~ServerLoop();

  // Listens with `listen(base)` (a TcpTableServer::listen or
  // VerbsTableServer::listen call) and starts the loop thread.
  template <typename Listen>
  Status start(Listen listen) {
    make_base();
    auto s = listen(base_);
    if (!s.ok()) return s.status();
    run(std::move(*s));
    return {};
  }

  // Runs `f` on the loop thread and returns its result.
  template <typename F>
  auto on_loop(F f) {
    struct Call {
      F f;
      std::promise<decltype(f())> done;
    } call{std::move(f), {}};
    auto result = call.done.get_future();
    event_base_once(
        base_, -1, EV_TIMEOUT,
        [](evutil_socket_t, short, void* arg) {
          auto* c = static_cast<Call*>(arg);
          c->done.set_value(c->f());
        },
        &call, nullptr);
    return result.get();
  }

  // On the loop thread, as TableServer requires; a failure fails the test.
  void publish(TablePtr table);
  size_t client_count();
  // The port the server listens on.
  uint16_t port() const { return port_; }
  // Loop thread only (inside on_loop).
  TableServer& server() { return *server_; }

 private:
  void make_base();
  void run(std::unique_ptr<TableServer> server);

  event_base* base_ = nullptr;
  event* idle_ = nullptr;
  std::unique_ptr<TableServer> server_;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace rrs::test
