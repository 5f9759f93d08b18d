// --cluster --follow's classification, with no server: COMMAND INFO entries
// (a peer's bytes, each field checked) into key specs, the keys of a
// command, the stream cut into units (MULTI/EXEC blocks whole, replication
// chatter dropped, SELECT n refused), and where each unit goes (one slot,
// every master, or refused: keys in several slots, no keys).
#include <gtest/gtest.h>
#include <hiredis/read.h>

#include <map>
#include <string>
#include <vector>

#include "client/cluster/command_keys.h"
#include "client/cluster/stream_units.h"
#include "proto/hash_slot.h"

namespace rrs {
namespace {

// RESP2 text builders for replies as a server sends them.
std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}
std::string num(long long n) { return ":" + std::to_string(n) + "\r\n"; }
std::string arr(const std::vector<std::string>& items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (const std::string& i : items) out += i;
  return out;
}
std::string status(const std::string& s) { return "+" + s + "\r\n"; }

// A COMMAND INFO entry as Redis 7 sends it.
std::string entry(const std::string& name, int first, int last, int step,
                  const std::vector<std::string>& flags = {},
                  const std::vector<std::string>& tips = {},
                  const std::vector<std::string>& subcommands = {}) {
  std::vector<std::string> f, t;
  for (const std::string& x : flags) f.push_back(status(x));
  for (const std::string& x : tips) t.push_back(bulk(x));
  return arr({bulk(name), num(-2), arr(f), num(first), num(last), num(step), arr({}), arr(t),
              arr({}), arr(subcommands)});
}

// A key spec: begin_search by index `begin` (or a keyword search when
// begin < 0), then `find`.
std::string key_spec(int begin, const std::string& find) {
  const std::string search = begin >= 0 ? arr({bulk("type"), bulk("index"), bulk("spec"),
                                               arr({bulk("index"), num(begin)})})
                                        : arr({bulk("type"), bulk("keyword"), bulk("spec"),
                                               arr({bulk("keyword"), bulk("KEYS"),
                                                    bulk("startfrom"), num(1)})});
  return arr(
      {bulk("flags"), arr({status("RW")}), bulk("begin_search"), search, bulk("find_keys"), find});
}
std::string keynum(int keynumidx, int firstkey, int keystep) {
  return arr({bulk("type"), bulk("keynum"), bulk("spec"),
              arr({bulk("keynumidx"), num(keynumidx), bulk("firstkey"), num(firstkey),
                   bulk("keystep"), num(keystep)})});
}
std::string range(int lastkey, int keystep, int limit) {
  return arr({bulk("type"), bulk("range"), bulk("spec"),
              arr({bulk("lastkey"), num(lastkey), bulk("keystep"), num(keystep), bulk("limit"),
                   num(limit)})});
}
// A movable-keys command's entry with key specs.
std::string movable(const std::string& name, const std::vector<std::string>& specs) {
  return arr({bulk(name), num(-3), arr({status("movablekeys")}), num(0), num(0), num(0), arr({}),
              arr({}), arr(specs), arr({})});
}

ReplyPtr parse(const std::string& resp) {
  redisReader* r = redisReaderCreate();
  redisReaderFeed(r, resp.data(), resp.size());
  void* out = nullptr;
  EXPECT_EQ(redisReaderGetReply(r, &out), REDIS_OK);
  redisReaderFree(r);
  return ReplyPtr(static_cast<redisReply*>(out));
}

// The commands a test target knows, answered as COMMAND INFO would.
const std::map<std::string, std::string>& known() {
  static const std::map<std::string, std::string> k = {
      {"set", entry("set", 1, 1, 1, {"write"})},
      {"mset", entry("mset", 1, -1, 2, {"write"})},
      {"rpoplpush", entry("rpoplpush", 1, 2, 1, {"write"})},
      {"sunionstore", entry("sunionstore", 1, -1, 1, {"write"})},
      {"incr", entry("incr", 1, 1, 1, {"write"})},
      {"eval", entry("eval", 0, 0, 0, {"movablekeys"})},
      {"flushall", entry("flushall", 0, 0, 0, {"write"}, {"request_policy:all_shards"})},
      {"swapdb", entry("swapdb", 0, 0, 0, {"write"})},
      {"zunionstore",
       movable("zunionstore", {key_spec(1, range(0, 1, 0)), key_spec(2, keynum(0, 1, 1))})},
      {"fcall", movable("fcall", {key_spec(2, keynum(0, 1, 1))})},
      {"sort_like", movable("sort_like", {key_spec(-1, range(0, 1, 0))})},
      {"function",
       entry("function", 0, 0, 0, {}, {},
             {entry("function|load", 0, 0, 0, {"write"}, {"request_policy:all_shards"})})},
  };
  return k;
}

// A target that answers COMMAND INFO from known() and COMMAND GETKEYS for
// EVAL by its numkeys; counts what it was asked.
struct FakeTarget {
  int info_asked = 0;
  CommandKeys::AskTarget ask() {
    return [this](const std::vector<std::string_view>& argv) -> Result<ReplyPtr> {
      if (argv.size() == 3 && argv[1] == "INFO") {
        info_asked++;
        auto it = known().find(std::string(argv[2]));
        return parse(arr({it == known().end() ? "*-1\r\n" : it->second}));
      }
      // GETKEYS EVAL script numkeys key...
      const size_t n = std::stoul(std::string(argv[4]));
      if (n == 0 || 5 + n > argv.size())
        return Status::error("COMMAND", "Invalid arguments specified for command");
      std::vector<std::string> keys;
      for (size_t i = 0; i < n; ++i) keys.push_back(bulk(std::string(argv[5 + i])));
      return parse(arr(keys));
    };
  }
};

std::vector<std::string> keys_of(CommandKeys& keys, std::vector<std::string_view> args) {
  auto of = keys.keys_of(args);
  EXPECT_TRUE(of.ok()) << of.status().message();
  return of.ok() ? of->keys : std::vector<std::string>{};
}

TEST(CommandKeys, FromTheTargetsSpecsCachedPerName) {
  FakeTarget target;
  CommandKeys keys(target.ask());
  EXPECT_EQ(keys_of(keys, {"SET", "k", "v"}), (std::vector<std::string>{"k"}));
  EXPECT_EQ(keys_of(keys, {"set", "j", "v"}), (std::vector<std::string>{"j"}));
  EXPECT_EQ(target.info_asked, 1);
  EXPECT_EQ(keys_of(keys, {"MSET", "a", "1", "b", "2"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(keys_of(keys, {"RPOPLPUSH", "s", "d"}), (std::vector<std::string>{"s", "d"}));
  // Movable keys: COMMAND GETKEYS, every time.
  EXPECT_EQ(keys_of(keys, {"EVAL", "return 1", "2", "x", "y", "arg"}),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(keys_of(keys, {"EVAL", "return 1", "0"}), std::vector<std::string>{});
  EXPECT_EQ(keys.getkeys_asked(), 2u);
  // A subcommand's own spec, from its container's entry.
  auto load = keys.keys_of(std::vector<std::string_view>{"FUNCTION", "LOAD", "code"});
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_TRUE(load->all_masters);
  // A command the target does not know cannot be applied.
  auto unknown = keys.keys_of(std::vector<std::string_view>{"NOSUCH", "k"});
  EXPECT_EQ(unknown.status().kind(), ErrorKind::kRefused);
  // A spec that places keys past the end: the target would refuse it.
  auto short_mset = keys.keys_of(std::vector<std::string_view>{"RPOPLPUSH", "s"});
  EXPECT_EQ(short_mset.status().kind(), ErrorKind::kBadData);
}

TEST(CommandKeys, MovableKeysByKeySpecsWithoutAskingTheTarget) {
  FakeTarget target;
  CommandKeys keys(target.ask());
  EXPECT_EQ(keys_of(keys, {"ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"}),
            (std::vector<std::string>{"d", "a", "b"}));
  EXPECT_EQ(keys_of(keys, {"FCALL", "f", "2", "x", "y", "arg"}),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(keys_of(keys, {"FCALL", "f", "0", "arg"}), std::vector<std::string>{});
  EXPECT_EQ(keys.getkeys_asked(), 0u);
  // More keys counted than there are arguments, or a search by keyword:
  // the target's GETKEYS decides.
  EXPECT_EQ(keys_of(keys, {"FCALL", "f", "1"}), std::vector<std::string>{});
  EXPECT_EQ(keys.getkeys_asked(), 1u);
  EXPECT_EQ(keys_of(keys, {"SORT_LIKE", "s", "1", "k"}), (std::vector<std::string>{"k"}));
  EXPECT_EQ(keys.getkeys_asked(), 2u);
}

TEST(CommandKeys, CommandInfoFieldsAreChecked) {
  auto ok = parse_command_info(*parse(arr({entry("mset", 1, -1, 2), "*-1\r\n"})));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 1u);
  EXPECT_EQ(ok->at("mset").step, 2);
  for (const std::string& bad :
       {arr({entry("x", -1, 1, 1)}), arr({entry("x", 1, 1, 0)}), arr({bulk("x")}), bulk("x"),
        arr({arr({bulk("x"), num(1), bulk("notflags"), num(1), num(1), num(1)})}),
        arr({arr({bulk("x"), num(1), arr({}), bulk("1"), num(1), num(1)})})}) {
    auto r = parse_command_info(*parse(bad));
    EXPECT_EQ(r.status().kind(), ErrorKind::kBadData) << bad;
  }
  CommandSpec mset;
  mset.first = 1, mset.last = -1, mset.step = 2;
  auto at = key_positions(mset, 5);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(*at, (std::vector<size_t>{1, 3}));
}

// Feeds `commands` to a builder, each ending 10 bytes after the last.
std::vector<StreamUnit> units_of(UnitBuilder& b,
                                 const std::vector<std::vector<std::string_view>>& commands,
                                 Status* error = nullptr) {
  std::vector<StreamUnit> out;
  uint64_t end = 0;
  for (const auto& c : commands) {
    auto u = b.add(c, end += 10);
    if (!u.ok()) {
      if (error) *error = u.status();
      return out;
    }
    if (*u) out.push_back(std::move(**u));
  }
  return out;
}

TEST(StreamUnits, BlocksWholeChatterDroppedOtherDbsRefused) {
  UnitBuilder b;
  auto units = units_of(b, {{"SELECT", "0"},
                            {"SET", "k", "v"},
                            {"PING"},
                            {"MULTI"},
                            {"INCR", "{t}a"},
                            {"REPLCONF", "GETACK", "*"},
                            {"SET", "{t}b", "1"},
                            {"EXEC"},
                            {"MULTI"}});
  ASSERT_EQ(units.size(), 4u);
  EXPECT_TRUE(units[0].commands.empty());  // SELECT 0
  EXPECT_EQ(units[1].commands.size(), 1u);
  EXPECT_EQ(units[1].end, 20u);
  EXPECT_TRUE(units[2].commands.empty());  // PING
  EXPECT_TRUE(units[3].transaction);
  EXPECT_EQ(units[3].commands.size(), 2u);
  EXPECT_EQ(units[3].end, 80u);
  EXPECT_TRUE(b.in_block());

  Status error;
  UnitBuilder other;
  units_of(other, {{"SELECT", "3"}}, &error);
  EXPECT_EQ(error.kind(), ErrorKind::kRefused);
  EXPECT_NE(error.message().find("only DB 0"), std::string::npos) << error.message();
  UnitBuilder nested;
  units_of(nested, {{"MULTI"}, {"MULTI"}}, &error);
  EXPECT_EQ(error.kind(), ErrorKind::kBadData);
}

TEST(StreamUnits, RoutedByTheSlotOfAllTheirKeys) {
  FakeTarget target;
  CommandKeys keys(target.ask());
  UnitBuilder b;
  auto units = units_of(b, {{"MSET", "{t}a", "1", "{t}b", "2"},
                            {"MULTI"},
                            {"SUNIONSTORE", "{t}u", "{t}x", "{t}y"},
                            {"EVAL", "s", "1", "{t}e"},
                            {"EXEC"},
                            {"FLUSHALL"},
                            {"FUNCTION", "LOAD", "code"},
                            {"PING"}});
  ASSERT_EQ(units.size(), 5u);
  for (size_t i : {0, 1}) {
    auto r = route_unit(units[i], keys);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->where, UnitRoute::Where::kSlot);
    EXPECT_EQ(r->slot, hash_slot("t"));
    EXPECT_TRUE(r->multi_key);  // a migration of the slot can split it
  }
  // FLUSHALL empties the source shard, not the whole target.
  auto flush = route_unit(units[2], keys);
  ASSERT_TRUE(flush.ok()) << flush.status().message();
  EXPECT_EQ(flush->where, UnitRoute::Where::kShardSlots);
  auto load = route_unit(units[3], keys);
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_EQ(load->where, UnitRoute::Where::kAllMasters);
  auto chatter = route_unit(units[4], keys);
  ASSERT_TRUE(chatter.ok());
  EXPECT_EQ(chatter->where, UnitRoute::Where::kNowhere);
}

TEST(StreamUnits, OneKeyHoweverOftenIsNotMultiKey) {
  FakeTarget target;
  CommandKeys keys(target.ask());
  UnitBuilder b;
  auto units = units_of(b, {{"SET", "k", "1"}, {"MULTI"}, {"INCR", "k"}, {"INCR", "k"}, {"EXEC"}});
  ASSERT_EQ(units.size(), 2u);
  for (const StreamUnit& u : units) {
    auto r = route_unit(u, keys);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->multi_key);
  }
}

TEST(StreamUnits, CrossSlotOrKeylessUnitsStopWithTheirOffset) {
  FakeTarget target;
  CommandKeys keys(target.ask());
  UnitBuilder b;
  auto units = units_of(b, {{"MSET", "a", "1", "b", "2"},
                            {"MULTI"},
                            {"SET", "{t}a", "1"},
                            {"SET", "{u}a", "1"},
                            {"EXEC"},
                            {"MULTI"},
                            {"SET", "{t}a", "1"},
                            {"FLUSHALL"},
                            {"EXEC"},
                            {"SWAPDB", "0", "1"},
                            {"EVAL", "s", "0"}});
  ASSERT_EQ(units.size(), 5u);
  for (const StreamUnit& u : units) {
    auto r = route_unit(u, keys);
    ASSERT_FALSE(r.ok()) << u.describe();
    EXPECT_EQ(r.status().kind(), ErrorKind::kRefused);
    EXPECT_NE(r.status().message().find("stream offset " + std::to_string(u.end)),
              std::string::npos)
        << r.status().message();
  }
  EXPECT_NE(route_unit(units[0], keys).status().message().find("slots"), std::string::npos);
}

}  // namespace
}  // namespace rrs
