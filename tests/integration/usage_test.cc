// Bad invocations exit 2 (usage) with a message, before touching anything;
// --version says what both programs are, exit 0.
#include <gtest/gtest.h>

#include <sstream>

#include "common/cli/exit_codes.h"
#include "tests/support/process.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"

namespace rrs::test {
namespace {

using std::chrono::seconds;

class UsageTest : public SidecarTest {};

int run_server(std::vector<std::string> args, std::string* err) {
  args.insert(args.begin(), server_binary());
  Process p(std::move(args));
  int code = p.wait(seconds(20));
  *err = p.describe();
  return code;
}

TEST_F(UsageTest, VersionSaysWhatEachProgramSpeaks) {
  for (const std::string& binary : {server_binary(), client_binary()}) {
    Process p({binary, "--version"});
    EXPECT_EQ(p.wait(seconds(20)), exit_code::kOk) << p.describe();
    const std::string out = p.stdout_text();
    for (const char* what : {" (commit ", "control protocol 5", "mapping table layout 6",
                             "RDB versions read: 1 to 12", "80 (Valkey)", "verbs: "})
      EXPECT_NE(out.find(what), std::string::npos) << what << "\n" << p.describe();
  }
}

// -h/--help promises the common flags one line each: a flag's text never
// wraps (a long head may put it on the next line, alone).
TEST_F(UsageTest, ShortHelpIsOneLineAFlag) {
  constexpr size_t kTextColumn = 26;
  const std::string indent(kTextColumn, ' ');
  for (const std::string& binary : {server_binary(), client_binary()}) {
    Process p({binary, "--help"});
    EXPECT_EQ(p.wait(seconds(20)), exit_code::kOk) << p.describe();
    std::istringstream lines(p.stdout_text());
    std::string line, flag;
    bool has_text = false;  // the current flag's text is already out
    while (std::getline(lines, line)) {
      if (line.rfind("  -", 0) == 0) {
        flag = line;
        // Text after the head's padding; a head past the column has none.
        has_text = line.size() > kTextColumn && line[kTextColumn - 1] == ' ';
      } else if (line.rfind(indent, 0) == 0) {
        EXPECT_FALSE(has_text) << "wraps: " << flag << "\n" << line;
        has_text = true;
      }
    }
  }
}

TEST_F(UsageTest, ServerUnknownFlag) {
  std::string err;
  EXPECT_EQ(run_server({"--redis", "127.0.0.1:1", "--no-such-flag"}, &err), exit_code::kUsage)
      << err;
}

TEST_F(UsageTest, ServerBadPort) {
  std::string err;
  EXPECT_EQ(run_server({"--redis", "127.0.0.1:1", "--port", "70000"}, &err), exit_code::kUsage)
      << err;
}

TEST_F(UsageTest, ServerBadTransport) {
  std::string err;
  EXPECT_EQ(run_server({"--redis", "127.0.0.1:1", "--transport", "carrier-pigeon"}, &err),
            exit_code::kUsage)
      << err;
}

// --source rdb reads only its --rdb-file; --rdb-file goes with --source rdb.
TEST_F(UsageTest, ServerRdbSourceFlags) {
  for (auto [args, expect] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--source", "rdb"}, "--source rdb needs --rdb-file FILE"},
           {{"--source", "rdb", "--rdb-file", "/nonexistent.rdb", "--redis", "127.0.0.1:1"},
            "drop --redis"},
           {{"--redis", "127.0.0.1:1", "--rdb-file", "/nonexistent.rdb"},
            "--rdb-file is read by --source rdb only"}}) {
    std::string err;
    EXPECT_EQ(run_server(args, &err), exit_code::kUsage) << err;
    EXPECT_NE(err.find(expect), std::string::npos) << err;
  }
}

// When snapshots are taken and how long a table is kept: bad values name
// what was expected.
TEST_F(UsageTest, ServerSnapshotFlags) {
  for (auto [args, expect] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--table-retain", "-2"}, "or -1: keep the table"},
           {{"--table-retain", "soon"}, "--table-retain"},
           {{"--snapshot-delay", "-1"}, "--snapshot-delay"},
           {{"--snapshot-every", "64M"}, "--snapshot-every must be below --log-size"}}) {
    args.insert(args.begin(), {"--redis", "127.0.0.1:1"});
    std::string err;
    EXPECT_EQ(run_server(args, &err), exit_code::kUsage) << err;
    EXPECT_NE(err.find(expect), std::string::npos) << err;
  }
}

// A CPU this process may not use (CPU_SETSIZE is 1024; no test machine has
// CPU 1000): exit 2, naming the CPUs it may use.
TEST_F(UsageTest, ServerCpuNotAllowedHere) {
  std::string err;
  EXPECT_EQ(run_server({"--redis", "127.0.0.1:1", "--cpu", "1000"}, &err), exit_code::kUsage)
      << err;
  EXPECT_NE(err.find("this process may use"), std::string::npos) << err;
}

TEST_F(UsageTest, ClientCpuNotAllowedHere) {
  ClientRun run = run_client({"127.0.0.1", "1", "--cpu", "1000"}, {}, seconds(20));
  EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
  EXPECT_NE(run.err.find("this process may use"), std::string::npos) << run.describe();
}

TEST_F(UsageTest, ClientWithoutArguments) {
  ClientRun run = run_client({}, {}, seconds(20));
  EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
  EXPECT_FALSE(run.err.empty()) << run.describe();
}

TEST_F(UsageTest, ClientFlushAndMergeTogether) {
  RedisProcess target;
  ASSERT_TRUE(target.started()) << target.start_error();
  ClientRun run = run_client({"127.0.0.1", "1", "--redis", target.address(), "--flush", "--merge"},
                             {}, seconds(20));
  EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
}

TEST_F(UsageTest, ClientBadPort) {
  ClientRun run = run_client({"127.0.0.1", "not-a-port"}, {}, seconds(20));
  EXPECT_EQ(run.exit_code, exit_code::kUsage) << run.describe();
}

}  // namespace
}  // namespace rrs::test
