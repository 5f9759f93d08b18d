// --verify's pure parts: a key's canonical form built from replies (as a
// peer could send them), the comparison of two keys, and the report lines.
#include <gtest/gtest.h>
#include <hiredis/read.h>

#include <memory>
#include <string>
#include <vector>

#include "client/verify/function_libraries.h"
#include "client/verify/key_compare.h"
#include "client/verify/key_source.h"
#include "client/verify/key_state.h"
#include "client/verify/report.h"

namespace rrs::verify {
namespace {

// The reply RESP text `resp` parses into.
struct Reply {
  explicit Reply(const std::string& resp) {
    redisReader* r = redisReaderCreate();
    redisReaderFeed(r, resp.data(), resp.size());
    void* out = nullptr;
    EXPECT_EQ(redisReaderGetReply(r, &out), REDIS_OK);
    redisReaderFree(r);
    reply.reset(static_cast<redisReply*>(out));
  }
  const redisReply& operator*() const { return *reply; }
  std::unique_ptr<redisReply, void (*)(void*)> reply{nullptr, freeReplyObject};
};

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
std::string array(const std::vector<std::string>& items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const auto& i : items) out += i;
  return out;
}

KeyState state_of(const std::string& type, const std::string& resp, int64_t pttl = kNoExpiry) {
  KeyState s;
  s.type = type;
  s.pttl = pttl;
  EXPECT_TRUE(take_value(*Reply(resp), s).ok());
  return s;
}

TEST(VerifyKeyState, ScoresCompareAsNumbers) {
  EXPECT_EQ(canonical_score("0.10000000000000001"), canonical_score("0.1"));
  EXPECT_EQ(canonical_score("inf"), canonical_score("+inf"));
  EXPECT_NE(canonical_score("1"), canonical_score("2"));
  KeyState a = state_of("zset", array({bulk("m"), bulk("0.10000000000000001")}));
  KeyState b = state_of("zset", array({bulk("m"), bulk("0.1")}));
  EXPECT_FALSE(compare_key(a, b, 0).has_value());
}

TEST(VerifyKeyState, SetsAndHashesIgnoreOrderListsDoNot) {
  EXPECT_FALSE(compare_key(state_of("set", array({bulk("a"), bulk("b")})),
                           state_of("set", array({bulk("b"), bulk("a")})), 0));
  EXPECT_FALSE(compare_key(state_of("hash", array({bulk("f"), bulk("1"), bulk("g"), bulk("2")})),
                           state_of("hash", array({bulk("g"), bulk("2"), bulk("f"), bulk("1")})),
                           0));
  auto d = compare_key(state_of("list", array({bulk("a"), bulk("b")})),
                       state_of("list", array({bulk("b"), bulk("a")})), 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, "value");
  EXPECT_EQ(d->source, "[0]=a");
  EXPECT_EQ(d->target, "[0]=b");
}

TEST(VerifyKeyState, MalformedRepliesAreBadData) {
  KeyState s;
  s.type = "hash";
  EXPECT_EQ(take_value(*Reply(array({bulk("f")})), s).kind(), ErrorKind::kBadData);
  s.type = "string";
  EXPECT_EQ(take_value(*Reply(array({})), s).kind(), ErrorKind::kBadData);
  s.type = "list";
  EXPECT_EQ(take_value(*Reply("-WRONGTYPE no\r\n"), s).kind(), ErrorKind::kBadData);
}

TEST(VerifyCompare, KindsOfDifference) {
  KeyState a = state_of("string", bulk("v"), 10000);
  KeyState none;
  EXPECT_EQ(compare_key(a, none, 0)->what, "missing");
  EXPECT_EQ(compare_key(a, state_of("list", array({bulk("v")})), 0)->what, "type");
  EXPECT_EQ(compare_key(a, state_of("string", bulk("w"), 10000), 0)->what, "value");
  EXPECT_FALSE(compare_key(a, state_of("string", bulk("v"), 8500), 2000));
  EXPECT_EQ(compare_key(a, state_of("string", bulk("v"), 7000), 2000)->what, "ttl");
  auto d = compare_key(a, state_of("string", bulk("v")), 2000);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, "ttl");
  EXPECT_EQ(d->target, "none");
}

TEST(VerifyCompare, FieldTtlsWithinTheTolerance) {
  KeyState a = state_of("hash", array({bulk("f"), bulk("1")}));
  KeyState b = a;
  a.field_expiry["f"] = 1'000'000;
  b.field_expiry["f"] = 1'001'000;
  EXPECT_FALSE(compare_key(a, b, 2000));
  EXPECT_EQ(compare_key(a, b, 500)->what, "field-ttl");
  b.field_expiry.clear();  // a target without field TTLs: "none"
  auto d = compare_key(a, b, 2000);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->source, "f=1000000");
  EXPECT_EQ(d->target, "f=none");
}

// XINFO STREAM FULL: fields only newer servers report are not differences;
// a group only one side has is.
TEST(VerifyCompare, StreamFieldsByVersion) {
  const std::string consumer7 = array({bulk("name"), bulk("c"), bulk("seen-time"), ":5\r\n"});
  const std::string consumer9 = array(
      {bulk("name"), bulk("c"), bulk("seen-time"), ":5\r\n", bulk("active-time"), ":9\r\n"});
  auto group = [](const std::string& consumer) {
    return array({array({bulk("name"), bulk("g"), bulk("consumers"), array({consumer})})});
  };
  KeyState old_server = state_of(
      "stream", array({bulk("length"), ":0\r\n", bulk("groups"), group(consumer7)}));
  KeyState new_server = state_of("stream", array({bulk("length"), ":0\r\n", bulk("entries-added"),
                                                  ":0\r\n", bulk("groups"), group(consumer9)}));
  EXPECT_FALSE(compare_key(old_server, new_server, 0));
  KeyState no_group = state_of("stream",
                               array({bulk("length"), ":0\r\n", bulk("groups"), "*0\r\n"}));
  auto d = compare_key(old_server, no_group, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, "value");
}

TEST(VerifyReport, LinesAreOneTokenPerField) {
  EXPECT_EQ(escape(std::string("a b\\\0\xff", 6)), "a\\x20b\\x5c\\x00\\xff");
  EXPECT_EQ(escape("abcdef", 3), "abc...");
  EXPECT_EQ(difference_line("k 1", 2, {"value", "x", "y"}),
            "different key=k\\x201 db=2 what=value source=x target=y");
  VerifyCounts c;
  c.keys = c.compared = 3;
  EXPECT_EQ(summary_line(c, 1.234),
            "verify: equal keys=3 compared=3 different=0 missing=0 extra=0 libraries=- "
            "libraries_different=0 seconds=1.23");
  c.libraries_compared = true;
  c.libraries = 2;
  EXPECT_NE(summary_line(c, 0).find(" libraries=2 libraries_different=0 "), std::string::npos);
  c.extra = 1;
  EXPECT_EQ(summary_line(c, 0).substr(0, 17), "verify: different");
  EXPECT_EQ(library_line("my lib", {"library-code", "#!lua name=a", "none"}),
            "different library=my\\x20lib what=library-code source=#!lua\\x20name=a target=none");
}

// FUNCTION LIST WITHCODE as RESP2 sends it: per library a flat
// name/value list, functions nested.
std::string library(const std::string& name, const std::string& code) {
  return array({bulk("library_name"), bulk(name), bulk("engine"), bulk("LUA"), bulk("functions"),
                array({array({bulk("name"), bulk("f"), bulk("description"), "$-1\r\n",
                              bulk("flags"), array({})})}),
                bulk("library_code"), bulk(code)});
}

TEST(VerifyLibraries, ParsedByNameAndCode) {
  auto libs = parse_libraries(*Reply(array({library("a", "code a"), library("b", "code b")})));
  ASSERT_TRUE(libs.ok()) << libs.status().message();
  EXPECT_EQ(*libs, (Libraries{{"a", "code a"}, {"b", "code b"}}));
  EXPECT_TRUE(parse_libraries(*Reply(array({})))->empty());
  EXPECT_EQ(parse_libraries(*Reply(bulk("x"))).status().kind(), ErrorKind::kBadData);
  EXPECT_EQ(parse_libraries(*Reply(array({array({bulk("library_name")})}))).status().kind(),
            ErrorKind::kBadData);
  EXPECT_EQ(
      parse_libraries(*Reply(array({array({bulk("library_name"), bulk("a")})}))).status().kind(),
      ErrorKind::kBadData);  // no code
}

TEST(VerifyLibraries, EachKindOfDifference) {
  const Libraries source = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  const Libraries target = {{"b", "2"}, {"c", "other"}, {"d", "4"}};
  auto d = compare_libraries(source, target);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].first, "a");
  EXPECT_EQ(d[0].second.what, "library-missing");
  EXPECT_EQ(d[1].first, "c");
  EXPECT_EQ(d[1].second.what, "library-code");
  EXPECT_EQ(d[1].second.target, "other");
  EXPECT_EQ(d[2].first, "d");
  EXPECT_EQ(d[2].second.what, "library-extra");
  EXPECT_TRUE(compare_libraries(source, source).empty());
  EXPECT_TRUE(compare_libraries({}, {}).empty());
}

TEST(VerifySample, SharesFollowTheDbSizes) {
  EXPECT_EQ(sample_share(100, 900, 1000), 90u);
  EXPECT_EQ(sample_share(100, 1, 1000), 1u);  // rounded up: every DB is looked at
  EXPECT_EQ(sample_share(100, 5, 10), 5u);    // never more than the DB holds
  EXPECT_EQ(sample_share(100, 0, 0), 0u);
}

}  // namespace
}  // namespace rrs::verify
