// Faults that must be survived, with real processes and nothing mocked: the
// network between a client and the sidecar cut mid-transfer (the sidecar in
// a network namespace of its own, its veth taken down), the master SIGKILLed
// mid-snapshot, the target SIGKILLed mid-load. Every wait is bounded.
//
// The network cases need root and `ip netns` (iproute2); without them they
// skip, saying why (RRS_REQUIRE_NETNS=1 makes that a failure). They run over
// TCP: a veth has no RDMA device. The others run over whichever transport
// the run uses (RRS_TEST_TRANSPORT).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "common/exit_codes.h"
#include "tests/support/dataset.h"
#include "tests/support/process.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
constexpr auto kStderr = Process::Stream::kStderr;

// The port the sidecar listens on inside its namespace (nothing else there).
constexpr uint16_t kNsSidecarPort = 12345;
// Keys in the namespaced sidecar's table. A client whose target is paused
// for writes stops with at most 16384 RESTOREs unanswered (the loader's
// limit) plus its read-ahead (17 reads of 64 KiB, about 8000 slots here):
// most of the table is still unread when the link is cut.
constexpr uint64_t kNetKeys = 60000;
const std::string kSyncedAll = "synced keys=" + std::to_string(kNetKeys) + " ";

std::string seconds_text(SteadyClock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// The `incomplete ...` line a client prints when a sync stops midway.
std::optional<Fields> incomplete_line(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("incomplete ", 0) == 0) return parse_fields(line);
  return std::nullopt;
}

// DEBUG DIGEST and INFO on a connection of the test's own, with RedisClient's
// default 30 s timeout: the admin connection's 2 s can be too short for the
// digest of a large dataset, or for a target busy loading, on a loaded
// 2-core machine.
std::string digest_of(const RedisProcess& redis) {
  auto c = redis.connect();
  if (!c.ok()) return "(no connection: " + c.status().message() + ")";
  return c->digest();
}

std::string info_field(const RedisProcess& redis, const std::string& section,
                       const std::string& field) {
  auto c = redis.connect();
  if (!c.ok()) return "";
  Reply r = c->command({"INFO", section});
  std::string info = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  size_t at = info.find("\n" + field + ":");
  if (at == std::string::npos) return "";
  at += field.size() + 2;
  return info.substr(at, info.find_first_of("\r\n", at) - at);
}

// SIGKILLs a test's redis-server (our child: its pid cannot be reused before
// its Process reaps it). The RedisProcess object stays, dead, until its scope ends.
void kill_redis(RedisProcess& redis) {
  std::string pid = info_field(redis, "server", "process_id");
  ASSERT_FALSE(pid.empty()) << "no process_id in INFO server";
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL), 0) << std::strerror(errno);
}

// Polls `done` every 20 ms until it holds or `timeout` passes.
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  while (!done()) {
    if (SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// ---------------------------------------------------------------------------
// A network of our own.

struct IpResult {
  int code = -1;
  std::string out, error;  // error: the command and its stderr, when code != 0
};

// Runs `ip args...` (10 s at most).
IpResult run_ip(std::vector<std::string> args) {
  args.insert(args.begin(), "ip");
  Process p(std::move(args));
  IpResult r;
  r.code = p.wait(10s);
  r.out = p.stdout_text();
  if (r.code != 0)
    r.error =
        "$ " + p.command_line() + " (exit " + std::to_string(r.code) + "): " + p.stderr_text();
  return r;
}

bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

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

  void create() {
    if (::geteuid() != 0) return give_up(true, "needs root (network namespaces and veths)");
    if (IpResult v = run_ip({"-V"}); v.code != 0)
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

  void claim_and_build() {
    std::set<int> used;
    IpResult list = run_ip({"netns", "list"});
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
    IpResult addrs = run_ip({"-o", "-4", "addr", "show"});
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
    if (IpResult r = run_ip({"netns", "add", ns}); r.code != 0)
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
      if (IpResult r = run_ip(step); r.code != 0) {
        destroy();
        return give_up(false, "set up the test network: " + r.error);
      }
    }
  }

  void give_up(bool cannot, std::string why) {
    cannot_ = cannot;
    why_ = std::move(why);
  }

  void destroy() {
    if (n_ < 0) return;
    run_ip({"link", "del", host_end(n_, 'c')});
    run_ip({"link", "del", host_end(n_, 'm')});
    run_ip({"netns", "del", ns_});
    n_ = -1;
  }

  int n_ = -1;
  std::string ns_;
  bool cannot_ = false;
  std::string why_;
};

// A master on the host, a sidecar in a namespace, a target on the host.
class NetCutTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    lab_.emplace();
    if (!lab_->ok()) {
      if (lab_->cannot() && !std::getenv("RRS_REQUIRE_NETNS")) GTEST_SKIP() << lab_->why();
      FAIL() << lab_->why();
    }
    master_.emplace(RedisOptions().with_args(
        {"--bind", "127.0.0.1", lab_->master_addr(), "--protected-mode", "no"}));
    ASSERT_TRUE(master_->started()) << master_->start_error();
    master_->run({"DEBUG", "POPULATE", std::to_string(kNetKeys), "k", "200"});
    sidecar_.emplace(std::vector<std::string>{
        "ip", "netns", "exec", lab_->ns(), server_binary(),
        "--redis", lab_->master_addr() + ":" + std::to_string(master_->port()),
        "--listen", lab_->sidecar_addr(), "--port", std::to_string(kNsSidecarPort),
        "--transport", "tcp"});
    ASSERT_TRUE(sidecar_->wait_for_line("ready", 60s)) << sidecar_->describe();
  }

  // rdma-client arguments (without the binary) for the namespaced sidecar.
  std::vector<std::string> client_args(const RedisProcess& target,
                                       std::vector<std::string> extra) const {
    std::vector<std::string> a = {lab_->sidecar_addr(), std::to_string(kNsSidecarPort), "--redis",
                                  target.address(), "--transport", "tcp"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // Starts a client into `target` and returns once it is mid-transfer: the
  // target is paused for writes (CLIENT PAUSE WRITE), so the loader stalls
  // and the fetcher stops with its read-ahead full and most of the table
  // unread (see kNetKeys). The caller cuts the link, then unpauses.
  Process start_stalled_client(RedisProcess& target, std::vector<std::string> extra) {
    target.run({"CLIENT", "PAUSE", "60000", "WRITE"});
    std::vector<std::string> argv = client_args(
        target, {"--chunk-size", "64k", "--in-flight", "2"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.begin(), client_binary());
    Process client(argv);
    EXPECT_TRUE(client.wait_for_line("table epoch", 30s, kStderr)) << client.describe();
    std::this_thread::sleep_for(500ms);  // the read-ahead fills up
    return client;
  }

  // Declared first, deleted last: after every process that uses it.
  std::optional<NetLab> lab_;
  std::optional<RedisProcess> master_;
  std::optional<Process> sidecar_;
};

// Cut for good: the client must neither hang nor blame the wrong thing. It
// waits --io-timeout for an answer, spends its one reconnect within
// --connect-timeout, and stops with exit 3 naming the sidecar and the
// timeout, saying what the target holds. Once the link is back, a new run
// with --flush loads the whole table.
TEST_F(NetCutTest, CutMidTransferFailsWithinTheTimeoutsThenANewRunSucceeds) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  Process client = start_stalled_client(
      target, {"--io-timeout", "4", "--connect-timeout", "3", "--retries", "1"});
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(lab_->cut(), "");
  target.run({"CLIENT", "UNPAUSE"});
  const auto t0 = SteadyClock::now();

  const int code = client.wait(60s);
  const auto took = SteadyClock::now() - t0;
  const std::string err = client.stderr_text();
  EXPECT_EQ(code, exit_code::kUnavailable) << client.describe();
  // 4 s waiting for an answer + 3 s of reconnecting, and slack for a loaded machine.
  EXPECT_LT(took, 4s + 3s + 10s) << seconds_text(took) << "\n" << client.describe();
  EXPECT_GE(took, 3s) << "it should have waited out --io-timeout\n" << client.describe();
  EXPECT_NE(err.find("timed out"), std::string::npos) << client.describe();
  EXPECT_NE(err.find("rdma-server"), std::string::npos) << client.describe();
  EXPECT_NE(err.find(lab_->sidecar_addr()), std::string::npos)
      << "should name the sidecar it could not reach\n" << client.describe();
  EXPECT_NE(err.find("reconnecting"), std::string::npos) << client.describe();
  auto incomplete = incomplete_line(client.stdout_text());
  ASSERT_TRUE(incomplete) << client.describe();
  EXPECT_EQ((*incomplete)["target"], "partial") << client.describe();
  EXPECT_LT(field_u64(*incomplete, "keys"), field_u64(*incomplete, "table_keys"))
      << "the cut should have come mid-transfer\n" << client.describe();
  EXPECT_TRUE(sidecar_->running()) << sidecar_->describe();

  ASSERT_EQ(lab_->restore(), "");
  ClientRun again = run_client(client_args(target, {"--flush", "--connect-timeout", "20"}), {},
                               90s);
  EXPECT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_EQ(again.count("keys"), kNetKeys) << again.describe();
  EXPECT_EQ(digest_of(target), digest_of(*master_));
}

// A cut shorter than --io-timeout: TCP retransmits once the link is back,
// and the same run completes on its first connection.
TEST_F(NetCutTest, CutShorterThanTheIoTimeoutIsRiddenOut) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  Process client = start_stalled_client(target, {"--io-timeout", "20", "--retries", "1"});
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(lab_->cut(), "");
  target.run({"CLIENT", "UNPAUSE"});
  std::this_thread::sleep_for(3s);  // the client is waiting on reads that went nowhere
  EXPECT_TRUE(client.running()) << client.describe();
  ASSERT_EQ(lab_->restore(), "");

  EXPECT_EQ(client.wait(90s), 0) << client.describe();
  EXPECT_NE(client.stdout_text().find(kSyncedAll), std::string::npos) << client.describe();
  EXPECT_EQ(client.stderr_text().find("reconnect"), std::string::npos)
      << "the connection should have survived the cut\n" << client.describe();
  EXPECT_EQ(digest_of(target), digest_of(*master_));
}

// A cut longer than --io-timeout but shorter than --connect-timeout: the
// client gives the connection up, reconnects once the link is back, finds
// the same epoch and resumes where it stopped.
TEST_F(NetCutTest, CutPastTheIoTimeoutReconnectsAndResumes) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  Process client = start_stalled_client(
      target, {"--io-timeout", "3", "--connect-timeout", "30", "--retries", "2"});
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(lab_->cut(), "");
  target.run({"CLIENT", "UNPAUSE"});
  ASSERT_TRUE(client.wait_for_line("reconnecting", 30s, kStderr)) << client.describe();
  std::this_thread::sleep_for(2s);  // a connect attempt or two into the void
  ASSERT_EQ(lab_->restore(), "");

  EXPECT_EQ(client.wait(90s), 0) << client.describe();
  EXPECT_NE(client.stdout_text().find(kSyncedAll), std::string::npos) << client.describe();
  EXPECT_NE(client.stderr_text().find("reconnected; resuming epoch"), std::string::npos)
      << client.describe();
  EXPECT_EQ(digest_of(target), digest_of(*master_));
}

// ---------------------------------------------------------------------------
// Processes killed under the sidecar and the client.

class KillTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(master_.started()) << master_.start_error();
  }
  RedisProcess master_;
};

// psync: the master dies mid-RDB. The sidecar must not publish what it had
// parsed; it retries (1 s, then doubling), and a master that is back on its
// port with its data (restarted from its RDB, as a crashed master is) gets
// a complete table.
TEST_F(KillTest, PsyncMasterKilledMidRdbThenBackWithItsData) {
  constexpr uint64_t kMasterKeys = 30000;
  master_.run({"DEBUG", "POPULATE", std::to_string(kMasterKeys), "k", "100"});
  master_.run({"SAVE"});  // what a restart loads
  TempDir saved("nf-rdb");
  std::filesystem::copy_file(master_.dir().file("dump.rdb"), saved.file("dump.rdb"));
  const std::string want = digest_of(master_);
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "100"});  // ~3 s of RDB

  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.process().wait_for_line("began a full resync", 30s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(500ms);
  kill_redis(master_);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(server.process().wait_for_line("retrying", 15s, kStderr)) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();

  // Back within the sidecar's first pause (1 s; a restart takes 50-250 ms
  // here), holding what it held.
  RedisOptions again_opts;
  again_opts.port = master_.port();
  again_opts.extra_args = {"--dir", saved.path(), "--dbfilename", "dump.rdb"};
  RedisProcess again(again_opts);
  ASSERT_TRUE(again.started()) << again.start_error();
  ASSERT_EQ(digest_of(again), want);

  ASSERT_TRUE(server.wait_ready(60s)) << server.describe();
  EXPECT_EQ(field_u64(server.ready_fields(), "records"), kMasterKeys)
      << server.ready_line();
  EXPECT_EQ(server.process().stdout_text().find("ready"),
            server.process().stdout_text().rfind("ready"))
      << "one ready line\n" << server.describe();
  RedisProcess fresh;
  ASSERT_TRUE(fresh.started()) << fresh.start_error();
  ClientRun run = sync_to(server.port(), fresh);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(digest_of(fresh), want);
}

// psync: the master dies mid-RDB and does not come back. No table, ever:
// the sidecar keeps retrying with backoff (1 s doubling to 30 s), as for a
// master that is restarting, and says so.
TEST_F(KillTest, PsyncMasterKilledMidRdbAndGoneNeverPublishes) {
  master_.run({"DEBUG", "POPULATE", "30000", "k", "100"});
  master_.run({"CONFIG", "SET", "rdb-key-save-delay", "100"});
  SidecarServer server(master_.address(), {"--source", "psync"});
  ASSERT_TRUE(server.process().wait_for_line("began a full resync", 30s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(500ms);
  kill_redis(master_);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(server.process().wait_for_line("retrying", 15s, kStderr)) << server.describe();
  // It keeps retrying with backoff (the master may be restarting), naming
  // the master, and never publishes.
  ASSERT_TRUE(server.process().wait_for_line("snapshot attempt 2", 15s, kStderr))
      << server.describe();
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(server.process().running()) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(master_.address()), std::string::npos)
      << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();
}

// scan: the master dies mid-SCAN. A walk cannot resume, so the sidecar
// stops, naming the master, and publishes nothing.
TEST_F(KillTest, ScanMasterKilledMidScanNeverPublishes) {
  master_.run({"DEBUG", "POPULATE", "200000", "k", "10"});
  // SCAN COUNT 10: 20000 round trips, time enough to catch the walk.
  SidecarServer server(master_.address(), {"--source", "scan", "--scan-count", "10"});
  bool walking = eventually(
      [&] {
        Reply r = master_.command({"CLIENT", "LIST"});
        std::string list = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
        return list.find("cmd=scan") != std::string::npos ||
               list.find("cmd=dump") != std::string::npos;
      },
      30s);
  ASSERT_TRUE(walking) << server.describe();
  kill_redis(master_);
  ASSERT_FALSE(HasFailure());
  const int code = server.process().wait(60s);
  // A master gone mid-walk is "unavailable": exit 3, naming it, no table.
  EXPECT_EQ(code, exit_code::kUnavailable) << server.describe();
  EXPECT_EQ(server.process().stdout_text().find("ready"), std::string::npos) << server.describe();
  EXPECT_NE(server.process().stderr_text().find(master_.address()), std::string::npos)
      << server.describe();
}

// The target dies mid-load: the client stops at once with exit 3 naming the
// target, and the sidecar, untouched, serves the next client.
class TargetKillTest : public KillTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(TargetKillTest, TargetKilledMidLoad) {
  const std::string mode = GetParam();
  const bool replica = mode == "replica";
  fill_strings(master_, 0, "k:", 25000, 1000);
  SidecarServer server(master_.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();

  RedisOptions target_opts;
  if (replica) target_opts.extra_args = {"--repl-diskless-load", "swapdb"};
  RedisProcess target(target_opts);
  ASSERT_TRUE(target.started()) << target.start_error();
  std::vector<std::string> args = {client_binary(), sidecar_host(), std::to_string(server.port()),
                                   "--redis", target.address(),
                                   "--transport", test_transport(),
                                   "--mode", mode,
                                   "--io-timeout", "10",
                                   "--chunk-size", "64k", "--in-flight", "2"};
  if (replica) {
    // 200 us per key: the target takes 5 s to load the RDB from the stream.
    target.run({"CONFIG", "SET", "key-load-delay", "200"});
    Process client(args);
    ASSERT_TRUE(client.wait_for_line("the target connected", 30s, kStderr)) << client.describe();
    EXPECT_TRUE(eventually(
        [&] {
          return info_field(target, "persistence", "loading") == "1" ||
                 info_field(target, "persistence", "async_loading") == "1";
        },
        10s))
        << "the target never started loading\n" << client.describe();
    std::this_thread::sleep_for(300ms);
    kill_redis(target);
    ASSERT_FALSE(HasFailure());
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
    EXPECT_LT(SteadyClock::now() - t0, 10s) << client.describe();
    EXPECT_NE(client.stderr_text().find("target"), std::string::npos) << client.describe();
    EXPECT_EQ(client.stdout_text().find("synced"), std::string::npos) << client.describe();
  } else {
    // Paused for writes: the client has RESTOREs in flight and most of the
    // table still to load when the target dies.
    target.run({"CLIENT", "PAUSE", "60000", "WRITE"});
    Process client(args);
    ASSERT_TRUE(client.wait_for_line("table epoch", 30s, kStderr)) << client.describe();
    std::this_thread::sleep_for(500ms);
    kill_redis(target);
    ASSERT_FALSE(HasFailure());
    const auto t0 = SteadyClock::now();
    EXPECT_EQ(client.wait(60s), exit_code::kUnavailable) << client.describe();
    EXPECT_LT(SteadyClock::now() - t0, 10s) << client.describe();
    EXPECT_NE(client.stderr_text().find("target Redis " + target.address()), std::string::npos)
        << client.describe();
    EXPECT_TRUE(incomplete_line(client.stdout_text())) << client.describe();
  }

  EXPECT_TRUE(server.process().running()) << server.describe();
  RedisProcess fresh;
  ASSERT_TRUE(fresh.started()) << fresh.start_error();
  ClientRun run = sync_to(server.port(), fresh, {"--mode", mode});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(digest_of(fresh), digest_of(master_));
}

INSTANTIATE_TEST_SUITE_P(Modes, TargetKillTest, ::testing::Values("restore", "replica"),
                         [](const auto& p) {
                           return p.param == "replica" ? "Replica" : "Restore";
                         });

}  // namespace
}  // namespace rrs::test
