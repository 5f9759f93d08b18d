// A network of the test's own: a namespace behind two veth pairs, and a way
// to cut one of them (net_cut_test runs a sidecar in it). Needs root and
// iproute2's `ip netns`; without them NetLab says it cannot, and the test
// skips.
#pragma once

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace rrs::test {

// Runs `ip args...` (run_command()).
CommandResult run_ip(std::vector<std::string> args);

// A network namespace for the sidecar, reached from the host over two veth
// pairs in 10.199.<n>.0/24:
//   client link:  host rrsnf<n>c 10.199.<n>.1/30  <->  namespace c0 10.199.<n>.2/30
//   master link:  host rrsnf<n>m 10.199.<n>.5/30  <->  namespace m0 10.199.<n>.6/30
// The client (on the host) reaches the sidecar over the first, the sidecar
// reaches the master (on the host, bound to 10.199.<n>.5 too) over the
// second, and the target Redis stays on the host's loopback. cut() takes c0
// down inside the namespace: the host keeps its route (marked linkdown), so
// the client's packets vanish as on a pulled cable, nothing is refused or
// reset, and the master link stays up.
//
// Everything is deleted with the object, also when the test fails. <n> is
// claimed under a lock file, skipping any 10.199.<n> the host already uses,
// and namespaces left by a test process that died (named rrs-nf-<n>-<pid>)
// are removed first: parallel runs (ctest -j) never collide.
class NetLab {
 public:
  // Check ok(); if not, cannot() says whether this machine simply cannot
  // (not root, no iproute2, no namespaces: the test skips), and why() says
  // what happened.
  NetLab() { create(); }
  ~NetLab() { destroy(); }
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  bool ok() const { return n_ >= 0; }
  bool cannot() const { return cannot_; }
  const std::string& why() const { return why_; }

  const std::string& ns() const { return ns_; }
  std::string sidecar_addr() const { return prefix() + ".2"; }
  std::string master_addr() const { return prefix() + ".5"; }

  // "" or what failed.
  std::string cut() { return run_ip({"-n", ns_, "link", "set", "c0", "down"}).error; }
  std::string restore() { return run_ip({"-n", ns_, "link", "set", "c0", "up"}).error; }

 private:
  std::string prefix() const { return "10.199." + std::to_string(n_); }
  static std::string host_end(int n, char which) { return "rrsnf" + std::to_string(n) + which; }

  void create();
  void claim_and_build();
  void give_up(bool cannot, std::string why);
  void destroy();

  int n_ = -1;
  std::string ns_;
  bool cannot_ = false;
  std::string why_;
};

}  // namespace rrs::test
