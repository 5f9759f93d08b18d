// rdma-client --verify, run as a user runs it, against real servers: equal
// after a real sync (one version, and across versions), each kind of
// difference found and named, a sample run, and a side it cannot reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "tests/support/dataset.h"
#include "tests/support/ports.h"
#include "tests/support/redis_process.h"
#include "tests/support/sidecar.h"
#include "tests/support/temp_dir.h"

namespace rrs::test {
namespace {

// A key that is not text: a space, a NUL, a byte above 0x7f.
const std::string kBinaryKey("bin key\0\xff", 9);

ClientRun verify(const RedisProcess& source, const RedisProcess& target,
                 std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--verify", "--source-redis", source.address(), "--redis",
                                   target.address()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_client(args);
}

// The summary line's fields ("verify: equal keys=N ..."), empty if none.
Fields summary(const ClientRun& run) {
  const size_t at = run.out.find("verify: ");
  if (at == std::string::npos) return {};
  return parse_fields(run.out.substr(at, run.out.find('\n', at) - at));
}

bool says(const ClientRun& run, const std::string& text) {
  return run.out.find(text) != std::string::npos;
}

// Source and target by the shipped binaries: rdma-server snapshots the source,
// rdma-client loads the target.
void sync(RedisProcess& source, RedisProcess& target, std::vector<std::string> extra = {}) {
  SidecarServer server(source.address());
  ASSERT_TRUE(server.wait_ready()) << server.describe();
  ClientRun run = sync_to(server.port(), target, std::move(extra));
  ASSERT_EQ(run.exit_code, 0) << run.describe();
}

class VerifyTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(source_.started()) << source_.start_error();
    ASSERT_TRUE(target_.started()) << target_.start_error();
  }
  RedisProcess source_, target_;
};

TEST_F(VerifyTest, EqualAfterARealSync) {
  fill_all_types(source_);
  source_.run({"SET", kBinaryKey, std::string("v\0\x01", 3)});
  source_.run({"SET", "ttl", "v", "PX", "3600000"});
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(sync(source_, target_));

  ClientRun run = verify(source_, target_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  Fields f = summary(run);
  EXPECT_TRUE(says(run, "verify: equal")) << run.describe();
  EXPECT_EQ(field_u64(f, "keys"), source_.client().total_keys()) << run.describe();
  EXPECT_EQ(field_u64(f, "compared"), source_.client().total_keys()) << run.describe();
  EXPECT_EQ(field_u64(f, "different"), 0u) << run.describe();
}

TEST_F(VerifyTest, FunctionLibrariesComparedByNameAndCode) {
  const std::string lib = "#!lua name=lib\nredis.register_function('f', function() return 1 end)";
  const std::string other = "#!lua name=lib\nredis.register_function('f', function() return 2 end)";
  source_.run({"SET", "k", "v"});
  source_.run({"FUNCTION", "LOAD", lib});
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(sync(source_, target_));
  ClientRun run = verify(source_, target_);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "libraries"), 1u) << run.describe();

  target_.run({"FUNCTION", "LOAD", "REPLACE", other});
  target_.run({"FUNCTION", "LOAD",
               "#!lua name=more\nredis.register_function('g', function() return 3 end)"});
  ASSERT_FALSE(HasFailure());
  run = verify(source_, target_);
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_TRUE(says(run, "different library=lib what=library-code")) << run.describe();
  EXPECT_TRUE(says(run, "different library=more what=library-extra")) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "libraries_different"), 2u) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "different"), 0u) << run.describe();  // the keys are equal

  // A user who may not list functions still gets its keys compared.
  target_.run({"FUNCTION", "FLUSH"});
  target_.run({"ACL", "SETUSER", "keys-only", "on", ">pw", "~*", "+@all", "-function"});
  TempDir dir("verify-acl");
  run = verify(source_, target_, {"--redis-auth-file", dir.write_file("auth", "keys-only pw\n")});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.err.find("function libraries not compared: the target refused FUNCTION LIST"),
            std::string::npos)
      << run.describe();
  EXPECT_TRUE(says(run, " libraries=- ")) << run.describe();
}

TEST_F(VerifyTest, EachKindOfDifferenceIsNamed) {
  fill_strings(source_, 0, "k:", 200);
  source_.run({"SET", kBinaryKey, "v"});
  source_.run({"SET", "gone", "v"});
  source_.run({"SET", "ttl", "v", "PX", "3600000"});
  source_.run({"RPUSH", "list", "a", "b"});
  source_.run({"XADD", "events", "1-1", "f", "v"});
  source_.run({"XGROUP", "CREATE", "events", "workers", "0"});
  source_.run({"SELECT", "3"});
  source_.run({"SET", "in-db3", "v"});
  source_.run({"SELECT", "0"});
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(sync(source_, target_));
  ASSERT_EQ(verify(source_, target_).exit_code, 0);

  target_.run({"SET", kBinaryKey, "changed"});
  target_.run({"DEL", "gone"});
  target_.run({"SET", "extra", "v"});
  target_.run({"PEXPIRE", "ttl", "60000"});  // an hour on the source
  target_.run({"RPUSH", "list", "c"});
  target_.run({"XGROUP", "CREATE", "events", "others", "0"});
  ASSERT_FALSE(HasFailure());

  ClientRun run = verify(source_, target_);
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_TRUE(says(run, "different key=bin\\x20key\\x00\\xff db=0 what=value source=v "
                        "target=changed"))
      << run.describe();
  EXPECT_TRUE(says(run, "different key=gone db=0 what=missing")) << run.describe();
  EXPECT_TRUE(says(run, "different key=extra db=0 what=extra")) << run.describe();
  EXPECT_TRUE(says(run, "different key=ttl db=0 what=ttl")) << run.describe();
  EXPECT_TRUE(says(run, "different key=list db=0 what=value source=[2]\\x20absent target=[2]=c"))
      << run.describe();
  EXPECT_TRUE(says(run, "different key=events db=0 what=value")) << run.describe();
  Fields f = summary(run);
  EXPECT_TRUE(says(run, "verify: different")) << run.describe();
  EXPECT_EQ(field_u64(f, "different"), 4u) << run.describe();
  EXPECT_EQ(field_u64(f, "missing"), 1u) << run.describe();
  EXPECT_EQ(field_u64(f, "extra"), 1u) << run.describe();

  // --max-differences bounds the lines, not the counts.
  run = verify(source_, target_, {"--max-differences", "2"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  size_t lines = 0;
  for (size_t at = run.out.find("different key="); at != std::string::npos;
       at = run.out.find("different key=", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "missing"), 1u) << run.describe();

  // A TTL within the tolerance is the same TTL.
  target_.run({"PEXPIRE", "ttl", "3599000"});
  run = verify(source_, target_, {"--ttl-tolerance-ms", "10000"});
  EXPECT_FALSE(says(run, "key=ttl ")) << run.describe();
}

TEST_F(VerifyTest, ASampleComparesThatManyKeys) {
  fill_strings(source_, 0, "k:", 2000);
  fill_strings(source_, 2, "k2:", 200);
  ASSERT_NO_FATAL_FAILURE(sync(source_, target_));
  ClientRun run = verify(source_, target_, {"--sample", "100"});
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  Fields f = summary(run);
  EXPECT_EQ(field_u64(f, "keys"), 100u) << run.describe();
  // Each DB's share rounded up: 91 of DB 0, 10 of DB 2.
  EXPECT_GE(field_u64(f, "compared").value_or(0), 100u) << run.describe();
  EXPECT_LE(field_u64(f, "compared").value_or(0), 102u) << run.describe();

  // A sample looks at the source's keys only: the target's extras are not seen,
  // every key it lacks is.
  target_.run({"SET", "extra", "v"});
  target_.run({"FLUSHDB"});
  run = verify(source_, target_, {"--sample", "50"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "extra"), 0u) << run.describe();
  EXPECT_GE(field_u64(summary(run), "missing").value_or(0), 40u) << run.describe();
}

TEST_F(VerifyTest, AnUnreachableSideCannotBeCompared) {
  ClientRun run = run_client({"--verify", "--source-redis",
                              "127.0.0.1:" + std::to_string(closed_loopback_port()), "--redis",
                              target_.address()});
  EXPECT_EQ(run.exit_code, 3) << run.describe();
  EXPECT_NE(run.err.find("source"), std::string::npos) << run.describe();
  EXPECT_FALSE(says(run, "verify:")) << run.describe();

  RedisProcess locked(RedisOptions().with_password("pw"));
  ASSERT_TRUE(locked.started()) << locked.start_error();
  run = verify(source_, locked);
  EXPECT_EQ(run.exit_code, 3) << run.describe();
  EXPECT_NE(run.err.find("NOAUTH"), std::string::npos) << run.describe();

  run = run_client({"--verify", "--redis", target_.address()});
  EXPECT_EQ(run.exit_code, 2) << run.describe();
}

// "redis-8.0" -> "redis_8_0": a test name.
std::string test_name(const ::testing::TestParamInfo<const char*>& p) {
  std::string n = p.param;
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
  return n;
}

// A hash field's TTL, on servers that have them (both sides the same version).
class VerifyFieldTtls : public SidecarTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(VerifyFieldTtls, AChangedFieldTtlIsADifference) {
  TestServer version;
  RRS_NEED_SERVER(version, GetParam());
  RedisProcess source(RedisOptions().with_server(version));
  RedisProcess target(RedisOptions().with_server(version));
  ASSERT_TRUE(source.started()) << source.start_error();
  ASSERT_TRUE(target.started()) << target.start_error();
  source.run({"HSET", "h", "a", "1", "b", "2"});
  source.run({"HPEXPIREAT", "h", "4102444800000", "FIELDS", "1", "b"});
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(sync(source, target));
  ClientRun run = verify(source, target);
  EXPECT_EQ(run.exit_code, 0) << run.describe();

  target.run({"HPEXPIREAT", "h", "4102444900000", "FIELDS", "1", "b"});
  run = verify(source, target);
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_TRUE(says(run, "different key=h db=0 what=field-ttl source=b=4102444800000 "
                        "target=b=4102444900000"))
      << run.describe();
  target.run({"HPERSIST", "h", "FIELDS", "1", "b"});
  run = verify(source, target);
  EXPECT_TRUE(says(run, "what=field-ttl source=b=4102444800000 target=b=none")) << run.describe();
}

INSTANTIATE_TEST_SUITE_P(Servers, VerifyFieldTtls, ::testing::Values("redis-8.0", "valkey-9.1"),
                         test_name);

// Across versions: a Redis 7.0 source synced into each newer server compares
// equal (values and stream fields as each version reports them), and a
// difference there is still found.
class VerifyAcrossVersions : public SidecarTest,
                             public ::testing::WithParamInterface<const char*> {};

TEST_P(VerifyAcrossVersions, EqualAfterASync) {
  TestServer version;
  RRS_NEED_SERVER(version, GetParam());
  RedisProcess source;  // Debian's Redis 7.0
  RedisProcess target(RedisOptions().with_server(version));
  ASSERT_TRUE(source.started()) << source.start_error();
  ASSERT_TRUE(target.started()) << target.start_error();
  fill_all_types(source);
  source.run({"ZADD", "scores", "0.1", "tenth", "3.3", "x"});
  source.run({"XADD", "cv-stream", "1-1", "f", "v"});
  source.run({"XGROUP", "CREATE", "cv-stream", "g", "0"});
  source.run({"XREADGROUP", "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "cv-stream", ">"});
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(sync(source, target));
  ClientRun run = verify(source, target);
  EXPECT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_TRUE(says(run, "verify: equal")) << run.describe();

  target.run({"ZADD", "scores", "0.2", "tenth"});
  target.run({"XACK", "cv-stream", "g", "1-1"});  // the group's pending entry
  run = verify(source, target);
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_TRUE(says(run, "different key=scores db=0 what=value")) << run.describe();
  EXPECT_TRUE(says(run, "different key=cv-stream db=0 what=value")) << run.describe();
  EXPECT_EQ(field_u64(summary(run), "different"), 2u) << run.describe();
}

INSTANTIATE_TEST_SUITE_P(Servers, VerifyAcrossVersions,
                         ::testing::Values("valkey-8.0", "redis-8.0", "valkey-9.1"), test_name);

}  // namespace
}  // namespace rrs::test
