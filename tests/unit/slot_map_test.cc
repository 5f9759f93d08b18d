// The target cluster's slot map from CLUSTER SLOTS replies (a peer's bytes:
// each field checked), and MOVED/ASK errors.
#include "client/cluster/slot_map.h"

#include <gtest/gtest.h>
#include <hiredis/read.h>

#include <memory>
#include <string>
#include <vector>

namespace rrs {
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
  std::unique_ptr<redisReply, void (*)(void*)> reply{nullptr, freeReplyObject};
};

std::string node(const std::string& ip, int port) {
  return "*3\r\n$" + std::to_string(ip.size()) + "\r\n" + ip + "\r\n:" + std::to_string(port) +
         "\r\n$2\r\nid\r\n";
}
std::string entry(int first, int last, const std::string& master) {
  return "*3\r\n:" + std::to_string(first) + "\r\n:" + std::to_string(last) + "\r\n" + master;
}

const Endpoint kAsked{"10.0.0.9", 7000};

TEST(SlotMap, TwoMastersOwnEverySlot) {
  Reply r("*3\r\n" + entry(0, 8000, node("10.0.0.1", 7001)) +
          entry(8001, 16000, node("10.0.0.2", 7002)) + entry(16001, 16383, node("10.0.0.1", 7001)));
  auto map = SlotMap::parse(*r.reply, kAsked);
  ASSERT_TRUE(map.ok()) << map.status().message();
  ASSERT_EQ(map->masters().size(), 2u);
  EXPECT_EQ(map->unowned_slots(), 0u);
  EXPECT_EQ(map->masters()[map->owner(0)].to_string(), "10.0.0.1:7001");
  EXPECT_EQ(map->masters()[map->owner(8001)].to_string(), "10.0.0.2:7002");
  EXPECT_EQ(map->owner(16383), map->owner(0));
  EXPECT_EQ(map->ranges_of(0), "0-8000,16001-16383");
  EXPECT_EQ(map->move(5, {"10.0.0.3", 7003}), 2);
  EXPECT_EQ(map->ranges_of(2), "5");
}

TEST(SlotMap, AMasterWithoutAnAddressIsWhereWeAsked) {
  Reply r("*1\r\n" + entry(0, 16383, node("", 7000)));
  auto map = SlotMap::parse(*r.reply, kAsked);
  ASSERT_TRUE(map.ok()) << map.status().message();
  EXPECT_EQ(map->masters()[0].to_string(), "10.0.0.9:7000");
}

TEST(SlotMap, UnownedSlotsAreCounted) {
  Reply r("*1\r\n" + entry(0, 99, node("h", 1)));
  auto map = SlotMap::parse(*r.reply, kAsked);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->unowned_slots(), 16384u - 100u);
  EXPECT_EQ(map->owner(100), SlotMap::kUnowned);
}

TEST(SlotMap, MalformedRepliesAreRefused) {
  for (const std::string& bad : std::vector<std::string>{
           "+OK\r\n",
           "*1\r\n:5\r\n",
           "*1\r\n*2\r\n:0\r\n:1\r\n",
           "*1\r\n" + entry(0, 16384, node("h", 1)),
           "*1\r\n" + entry(10, 5, node("h", 1)),
           "*1\r\n" + entry(-1, 5, node("h", 1)),
           "*1\r\n" + entry(0, 5, node("h", 0)),
           "*1\r\n" + entry(0, 5, node("h", 70000)),
           "*1\r\n" + entry(0, 5, node("?", 7000)),
           "*1\r\n" + entry(0, 5, "*1\r\n$1\r\nh\r\n"),
           "*1\r\n" + entry(0, 5, ":7\r\n"),
           "*2\r\n" + entry(0, 5, node("a", 1)) + entry(5, 9, node("b", 2)),
       }) {
    Reply r(bad);
    ASSERT_NE(r.reply, nullptr) << bad;
    auto map = SlotMap::parse(*r.reply, kAsked);
    EXPECT_FALSE(map.ok()) << bad;
    if (!map.ok()) {
      EXPECT_EQ(map.status().kind(), ErrorKind::kBadData) << bad;
    }
  }
}

TEST(SlotMap, RedirectionsAreParsed) {
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved);
  EXPECT_FALSE(moved->ask);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->to.to_string(), "127.0.0.1:6381");
  auto ask = parse_redirect("ASK 0 [::1]:7000");
  ASSERT_TRUE(ask);
  EXPECT_TRUE(ask->ask);
  EXPECT_EQ(ask->to.host, "::1");
  for (const char* other : {"ERR no", "MOVED", "MOVED 16384 h:1", "MOVED x h:1", "ASK 5 h",
                            "MOVED 5 h:0", "TRYAGAIN Multiple keys", "MOVED -1 h:1"})
    EXPECT_FALSE(parse_redirect(other)) << other;
}

}  // namespace
}  // namespace rrs
