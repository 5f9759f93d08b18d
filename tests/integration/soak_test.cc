// The soak: a writer of every type drives the master while, at seeded random
// points and repeatedly, the sidecar is killed and restarted, a target is
// killed and brought back empty, the sidecar's link to the master is cut, a
// new snapshot is asked for (SIGUSR1), and the master is made to answer the
// sidecar with a full resync (a new replication ID). A follower in each mode
// keeps its target in step; one that exits is checked against the code its
// event documents and restarted, as a service manager would. At the end both
// targets equal the master (DEBUG DIGEST and what the digest leaves out),
// each follower stops on SIGTERM with exit 0 and its `stopped` line, and the
// replica-mode target is handed off to the master with a partial resync.
//
// RRS_SOAK_SECONDS (default 90) is how long the events go on;
// RRS_SOAK_SEED replays a run's schedule (each run prints its seed).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/exit_codes.h"
#include "tests/support/eventually.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/write_load.h"

namespace rrs::test {
namespace {

using namespace std::chrono_literals;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// What the digest leaves out, without what replication does not carry
// exactly: a consumer's seen-time (when the server holding the stream saw
// it) and a group's entries-read and lag.
std::map<std::string, std::string> followed_state(RedisProcess& redis) {
  static const std::regex inexact(
      R"re("(seen-time|entries-read|lag)", (\(integer\) [0-9]+|\(nil\)))re");
  auto state = redis.client().state_outside_digest();
  for (auto& [name, value] : state) value = std::regex_replace(value, inexact, "\"$1\"");
  return state;
}

// A target Redis that can be killed and brought back, empty, on its port.
class Target {
 public:
  Target() : redis_(std::in_place) {}
  RedisProcess& redis() { return *redis_; }
  void kill_and_restart() {
    const uint16_t port = redis_->port();
    redis_->kill();
    redis_.reset();
    RedisOptions same_port;
    same_port.port = port;
    redis_.emplace(same_port);
    ASSERT_TRUE(redis_->started()) << redis_->start_error();
  }

 private:
  std::optional<RedisProcess> redis_;
};

// An rdma-client --follow, restarted when it exits (as systemd's
// Restart=on-failure would), each exit checked against what is allowed.
class Follower {
 public:
  Follower(std::string mode, Target& target) : mode_(std::move(mode)), target_(target) {}

  void start(uint16_t port, bool flush) {
    std::vector<std::string> argv = {client_binary(),
                                     sidecar_host(),
                                     std::to_string(port),
                                     "--redis",
                                     target_.redis().address(),
                                     "--follow",
                                     "--mode",
                                     mode_,
                                     "--status-interval",
                                     "1",
                                     "--transport",
                                     test_transport()};
    if (flush) argv.push_back("--flush");
    proc_.emplace(argv);
    ++starts_;
  }
  // The target was killed: the follower may exit 3 (it went away).
  void target_killed() { target_killed_ = true; }
  // A follower that exited: fine with 3 if its target was killed since it
  // started, else a failure. Restarts it either way.
  void check(uint16_t port) {
    if (!proc_ || proc_->running()) return;
    const int code = proc_->wait(5s);
    if (!target_killed_ || code != exit_code::kUnavailable)
      ADD_FAILURE() << mode_ << " follower exited " << code
                    << (target_killed_ ? " after its target was killed (expected 3)" : "") << ":\n"
                    << proc_->describe();
    target_killed_ = false;
    start(port, true);
  }
  Process& process() { return *proc_; }
  int starts() const { return starts_; }

 private:
  std::string mode_;
  Target& target_;
  std::optional<Process> proc_;
  bool target_killed_ = false;
  int starts_ = 0;
};

class SoakTest : public SidecarTest {
 protected:
  const std::vector<std::string> kFlags = {"--source", "psync", "--log-size", "16M"};

  // The sidecar, on the port it had before when it is restarted.
  void start_sidecar() {
    std::vector<std::string> flags = kFlags;
    if (port_ != 0) flags.insert(flags.end(), {"--port", std::to_string(port_)});
    sidecar_.emplace(master_.address(), flags);
    ASSERT_TRUE(sidecar_->wait_ready()) << sidecar_->describe();
    port_ = sidecar_->port();
  }

  // One event, by name (kEvents).
  void cause(const std::string& event) {
    std::cout << "soak: " << event << std::endl;
    if (event == "kill the sidecar") {
      sidecar_->process().signal(SIGKILL);
      sidecar_.reset();
      start_sidecar();
    } else if (event == "new snapshot") {
      sidecar_->process().signal(SIGUSR1);
    } else if (event == "cut the master link") {
      master_.run({"CLIENT", "KILL", "TYPE", "replica"});
    } else if (event == "master full resync") {
      // A new replication ID: the sidecar's PSYNC cannot continue.
      master_.run({"DEBUG", "CHANGE-REPL-ID"});
      master_.run({"CLIENT", "KILL", "TYPE", "replica"});
    } else if (event == "kill the restore target") {
      restore_target_.kill_and_restart();
      restore_.target_killed();
    } else {
      replica_target_.kill_and_restart();
      replica_.target_killed();
    }
  }

  // Events at random for `seconds`, the followers checked between them.
  void run_events(std::mt19937_64& rng, std::chrono::seconds seconds) {
    static const char* const kEvents[] = {"kill the sidecar",        "new snapshot",
                                          "cut the master link",     "master full resync",
                                          "kill the restore target", "kill the replica target"};
    std::map<std::string, int> happened;
    const auto end = std::chrono::steady_clock::now() + seconds;
    while (std::chrono::steady_clock::now() < end && !HasFatalFailure()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 4000));
      restore_.check(port_);
      replica_.check(port_);
      const std::string event = kEvents[rng() % std::size(kEvents)];
      ++happened[event];
      cause(event);
    }
    std::this_thread::sleep_for(3s);
    restore_.check(port_);
    replica_.check(port_);
    for (const auto& [event, n] : happened)
      std::cout << "soak: " << event << " x" << n << std::endl;
  }

  bool equal(RedisProcess& target) {
    return target.digest() == master_.digest() && followed_state(target) == followed_state(master_);
  }

  void expect_converged(Target& target, Follower& follower, const char* which) {
    EXPECT_TRUE(eventually([&] { return equal(target.redis()); }, 120s, 500ms))
        << which << " target: keyspace " << target.redis().keyspace() << " master "
        << master_.keyspace() << "\n"
        << follower.process().describe();
  }

  // The replica-mode target handed off to the master: a partial resync.
  void hand_off() {
    ClientRun run = sync_to(port_, replica_target_.redis(),
                            {"--mode", "replica", "--flush", "--handoff", "--master",
                             master_.address()});
    ASSERT_EQ(run.exit_code, 0) << run.describe();
    EXPECT_NE(run.out.find("partial_resync=yes"), std::string::npos) << run.describe();
    master_.run({"SET", "after-handoff", "1"});
    EXPECT_TRUE(eventually([&] { return equal(replica_target_.redis()); }, 30s, 200ms));
    EXPECT_EQ(replica_target_.redis().info_field("replication", "master_link_status"), "up");
  }

  RedisProcess master_;
  Target restore_target_, replica_target_;
  Follower restore_{"restore", restore_target_}, replica_{"replica", replica_target_};
  std::optional<SidecarServer> sidecar_;
  uint16_t port_ = 0;
};

TEST_F(SoakTest, NothingIsLostWhateverFails) {
  if (IsSkipped()) return;
  const uint64_t seed = env_u64("RRS_SOAK_SEED", std::random_device{}());
  const auto seconds = std::chrono::seconds(env_u64("RRS_SOAK_SECONDS", 90));
  std::cout << "soak seed=" << seed << " seconds=" << seconds.count() << " (RRS_SOAK_SEED=" << seed
            << " replays the schedule)" << std::endl;
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  ASSERT_TRUE(master_.started()) << master_.start_error();
  WriteLoad writer(master_);
  while (writer.rounds() < 20) std::this_thread::sleep_for(10ms);
  ASSERT_NO_FATAL_FAILURE(start_sidecar());
  restore_.start(port_, false);
  replica_.start(port_, false);
  run_events(rng, seconds);
  writer.stop();
  EXPECT_EQ(writer.errors(), "");

  expect_converged(restore_target_, restore_, "restore");
  expect_converged(replica_target_, replica_, "replica");
  // SIGTERM: each stops after its batch, says where, exits 0.
  for (Follower* f : {&restore_, &replica_}) {
    f->process().signal(SIGTERM);
    EXPECT_EQ(f->process().wait(30s), 0) << f->process().describe();
    EXPECT_NE(f->process().stdout_text().find("stopped offset="), std::string::npos)
        << f->process().describe();
  }
  hand_off();
}

}  // namespace
}  // namespace rrs::test
