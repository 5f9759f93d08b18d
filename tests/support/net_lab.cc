#include "tests/support/net_lab.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

namespace rrs::test {
namespace {

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

CommandResult run_ip(std::vector<std::string> args) {
  args.insert(args.begin(), "ip");
  return run_command(std::move(args));
}

void NetLab::create() {
  if (::geteuid() != 0) return give_up(true, "needs root (network namespaces and veths)");
  if (CommandResult v = run_ip({"-V"}); v.code != 0)
    return give_up(true, "iproute2's `ip` is not available (" + v.error + ")");

  const char* lock_path = ::access("/run/lock", W_OK) == 0 ? "/run/lock/rrs-net-fault.lock"
                                                           : "/tmp/rrs-net-fault.lock";
  int lock = ::open(lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    return give_up(false, std::string("lock ") + lock_path + ": " + std::strerror(errno));
  }
  claim_and_build();
  ::close(lock);  // releases the lock
}

void NetLab::claim_and_build() {
  std::set<int> used;
  CommandResult list = run_ip({"netns", "list"});
  if (list.code != 0) return give_up(true, "`ip netns` does not work here: " + list.error);
  std::istringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) {
    std::string name = line.substr(0, line.find(' '));
    int n = 0, pid = 0;
    if (std::sscanf(name.c_str(), "rrs-nf-%d-%d", &n, &pid) != 2) continue;
    if (pid_alive(pid)) {
      used.insert(n);
      continue;
    }
    // Left by a test that died: its veths go with their host ends.
    run_ip({"link", "del", host_end(n, 'c')});
    run_ip({"link", "del", host_end(n, 'm')});
    run_ip({"netns", "del", name});
  }
  CommandResult addrs = run_ip({"-o", "-4", "addr", "show"});
  for (size_t at = addrs.out.find("10.199."); at != std::string::npos;
       at = addrs.out.find("10.199.", at + 1))
    used.insert(std::atoi(addrs.out.c_str() + at + 7));
  int n = -1;
  for (int k = 0; k < 250 && n < 0; ++k) {
    int candidate = 1 + static_cast<int>((::getpid() + k) % 250);
    if (!used.contains(candidate)) n = candidate;
  }
  if (n < 0) return give_up(false, "no free 10.199.<n>.0/24 left");

  const std::string ns = "rrs-nf-" + std::to_string(n) + "-" + std::to_string(::getpid());
  if (CommandResult r = run_ip({"netns", "add", ns}); r.code != 0)
    return give_up(true, "cannot create a network namespace: " + r.error);
  n_ = n;
  ns_ = ns;
  const std::string p = prefix();
  const std::vector<std::vector<std::string>> steps = {
      {"link", "add", host_end(n, 'c'), "type", "veth", "peer", "name", "c0", "netns", ns},
      {"link", "add", host_end(n, 'm'), "type", "veth", "peer", "name", "m0", "netns", ns},
      {"addr", "add", p + ".1/30", "dev", host_end(n, 'c')},
      {"addr", "add", p + ".5/30", "dev", host_end(n, 'm')},
      {"link", "set", host_end(n, 'c'), "up"},
      {"link", "set", host_end(n, 'm'), "up"},
      {"-n", ns, "addr", "add", p + ".2/30", "dev", "c0"},
      {"-n", ns, "addr", "add", p + ".6/30", "dev", "m0"},
      {"-n", ns, "link", "set", "lo", "up"},
      {"-n", ns, "link", "set", "c0", "up"},
      {"-n", ns, "link", "set", "m0", "up"},
  };
  for (const auto& step : steps) {
    if (CommandResult r = run_ip(step); r.code != 0) {
      destroy();
      return give_up(false, "set up the test network: " + r.error);
    }
  }
}

void NetLab::give_up(bool cannot, std::string why) {
  cannot_ = cannot;
  why_ = std::move(why);
}

void NetLab::destroy() {
  if (n_ < 0) return;
  run_ip({"link", "del", host_end(n_, 'c')});
  run_ip({"link", "del", host_end(n_, 'm')});
  run_ip({"netns", "del", ns_});
  n_ = -1;
}

}  // namespace rrs::test
