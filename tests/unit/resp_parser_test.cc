// The streaming RESP command parser against replication-stream shaped input
// (SELECT, SET, MULTI/EXEC, binary values), fed whole, byte by byte and in
// random fragments; against every malformation it must refuse, with the
// offset it must name; against its limits; and for linear time on a large
// bulk and on a command of many arguments arriving in small pieces.
#include "proto/resp_parser.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace rrs::resp {
namespace {

using Args = std::vector<std::string>;

std::string encode(const Args& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

struct Outcome {
  std::vector<Args> commands;
  std::string error;  // empty: no error
  uint64_t consumed = 0, skipped = 0;
  size_t buffered = 0;
};

// Feeds `stream` in fragments of the sizes `next_size` returns, draining
// next() after every feed and checking the accounting as it goes.
template <typename SizeFn>
Outcome parse(std::string_view stream, SizeFn next_size, Limits limits = {}) {
  CommandParser p(limits);
  Outcome o;
  size_t at = 0;
  uint64_t command_bytes = 0;
  while (true) {
    while (true) {
      auto cmd = p.next();
      if (!cmd.ok()) {
        o.error = cmd.status().message();
        EXPECT_EQ(cmd.status().kind(), ErrorKind::kBadData);
        auto again = p.next();  // errors are sticky
        EXPECT_FALSE(again.ok());
        EXPECT_EQ(again.status().message(), o.error);
        o.consumed = p.consumed();
        return o;
      }
      if (!*cmd) break;
      Args args((*cmd)->args.begin(), (*cmd)->args.end());
      // Strict parsing means canonical encoding: the bytes re-encode exactly.
      EXPECT_EQ((*cmd)->stream_bytes, encode(args).size());
      command_bytes += (*cmd)->stream_bytes;
      o.commands.push_back(std::move(args));
    }
    EXPECT_EQ(command_bytes + p.skipped(), p.consumed());
    EXPECT_EQ(p.consumed() + p.buffered(), at);
    if (at == stream.size()) break;
    size_t n = std::min(stream.size() - at, std::max<size_t>(1, next_size()));
    p.feed(stream.substr(at, n));
    at += n;
  }
  o.consumed = p.consumed();
  o.skipped = p.skipped();
  o.buffered = p.buffered();
  return o;
}

Outcome parse_whole(std::string_view stream, Limits limits = {}) {
  return parse(
      stream, [&] { return stream.size(); }, limits);
}

// What a master sends after the RDB: SELECT, writes, a transaction, PINGs,
// binary values, with keepalive newlines at the start.
struct Sample {
  std::string stream;
  std::vector<Args> want;
  uint64_t skipped = 0;
};

Sample replication_stream() {
  Sample s;
  s.stream = "\n\n\r\n";
  s.skipped = 4;
  auto add = [&](Args args) {
    s.stream += encode(args);
    s.want.push_back(std::move(args));
  };
  add({"SELECT", "0"});
  add({"SET", "key:1", "value"});
  add({"MULTI"});
  add({"INCR", "counter"});
  add({"LPUSH", "list", "a", "b", "c"});
  add({"EXEC"});
  add({"PING"});
  add({"SET", std::string("bin\r\n\0\r\n*1\r\n$4\r\nPING\r\n", 22), ""});
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  add({"HSET", "h", "f", all_bytes});
  add({"SELECT", "15"});
  add({"SET", "big", std::string(5000, 'x') + "\r\n" + std::string(3000, '\0')});
  add({"PEXPIREAT", "big", "1893456000000"});
  add({"DEL", "", "k"});
  return s;
}

TEST(RespParserTest, ReplicationStreamWhole) {
  Sample s = replication_stream();
  Outcome o = parse_whole(s.stream);
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.commands, s.want);
  EXPECT_EQ(o.consumed, s.stream.size());
  EXPECT_EQ(o.skipped, s.skipped);
  EXPECT_EQ(o.buffered, 0u);
}

TEST(RespParserTest, ByteByByte) {
  Sample s = replication_stream();
  Outcome o = parse(s.stream, [] { return 1; });
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.commands, s.want);
  EXPECT_EQ(o.consumed, s.stream.size());
}

TEST(RespParserTest, RandomFragments) {
  Sample s = replication_stream();
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    Outcome o = parse(s.stream, [&] { return rng() % 2 ? rng() % 8 : rng() % 4096; });
    ASSERT_EQ(o.error, "") << "seed " << seed;
    ASSERT_EQ(o.commands, s.want) << "seed " << seed;
    ASSERT_EQ(o.consumed, s.stream.size()) << "seed " << seed;
  }
}

TEST(RespParserTest, LongStreamThroughACompactingBuffer) {
  // ~1 MB of small commands in fragments up to 8 KiB: the buffer fills and
  // drops consumed bytes many times, with a command split across each move.
  std::vector<Args> want;
  std::string stream;
  for (int i = 0; i < 20000; ++i) {
    want.push_back({"SET", "key:" + std::to_string(i), std::string(i % 50, 'v')});
    stream += encode(want.back());
    if (i % 1000 == 0) stream += "\n";
  }
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::mt19937 rng(seed);
    Outcome o = parse(stream, [&] { return rng() % 8192; });
    ASSERT_EQ(o.error, "") << "seed " << seed;
    ASSERT_EQ(o.commands, want) << "seed " << seed;
    ASSERT_EQ(o.skipped, 20u);
  }
}

TEST(RespParserTest, TruncatedInputWaitsForMore) {
  Sample s = replication_stream();
  for (size_t cut = 0; cut < s.stream.size(); cut += 7) {
    Outcome o = parse_whole(s.stream.substr(0, cut));
    ASSERT_EQ(o.error, "") << cut;
    ASSERT_LT(o.commands.size(), s.want.size()) << cut;
    ASSERT_EQ(o.consumed + o.buffered, cut);
  }
}

TEST(RespParserTest, KeepaliveNewlinesBetweenCommandsAreSkipped) {
  std::string ping = encode({"PING"});
  std::string stream = "\n" + ping + "\r\n\n" + ping + "\n";
  Outcome o = parse(stream, [] { return 1; });
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.commands, (std::vector<Args>{{"PING"}, {"PING"}}));
  EXPECT_EQ(o.skipped, 5u);
  EXPECT_EQ(o.consumed, stream.size());
}

TEST(RespParserTest, EmptyBulkAndOneArgument) {
  Outcome o = parse_whole("*1\r\n$0\r\n\r\n*2\r\n$0\r\n\r\n$0\r\n\r\n");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.commands, (std::vector<Args>{{""}, {"", ""}}));
}

TEST(RespParserTest, ByteSpanFeed) {
  std::string cmd = encode({"SET", "k", "v"});
  CommandParser p;
  p.feed(std::as_bytes(std::span(cmd.data(), cmd.size())));
  auto c = p.next();
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_EQ((*c)->args.size(), 3u);
  EXPECT_EQ((*c)->args[2], "v");
  EXPECT_EQ((*c)->stream_bytes, cmd.size());
  EXPECT_EQ(p.consumed(), cmd.size());
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(RespParserTest, PipelinedCommandsComeOutInOrder) {
  std::string stream;
  for (int i = 0; i < 1000; ++i) stream += encode({"SET", "k" + std::to_string(i), "v"});
  CommandParser p;
  p.feed(stream);
  for (int i = 0; i < 1000; ++i) {
    auto c = p.next();
    ASSERT_TRUE(c.ok() && *c) << i;
    ASSERT_EQ((*c)->args[1], "k" + std::to_string(i));
  }
  auto c = p.next();
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(*c);
  EXPECT_EQ(p.consumed(), stream.size());
}

// --- What it refuses, and how it says so -----------------------------------

// The error, which must be the same fed whole and byte by byte.
std::string error_of(const std::string& stream, Limits limits = {}) {
  Outcome whole = parse_whole(stream, limits);
  Outcome bytewise = parse(
      stream, [] { return 1; }, limits);
  EXPECT_EQ(whole.error, bytewise.error) << stream;
  EXPECT_EQ(whole.commands, bytewise.commands) << stream;
  return whole.error;
}

struct Bad {
  std::string stream;
  std::string error;  // the whole message
};

TEST(RespParserTest, MalformedCountLines) {
  const std::string p = "RESP command stream: ";
  const Bad cases[] = {
      {"*0\r\n", p + "bad multibulk count at stream byte 0: '*0'"},
      {"*-1\r\n", p + "bad multibulk count at stream byte 0: '*-1'"},
      {"*-10\r\n", p + "bad multibulk count at stream byte 0: '*-10'"},
      {"*+1\r\n$4\r\nPING\r\n", p + "bad multibulk count at stream byte 0: '*+1'"},
      {"*01\r\n$4\r\nPING\r\n", p + "bad multibulk count at stream byte 0: '*01'"},
      {"*\r\n", p + "bad multibulk count at stream byte 0: '*'"},
      {"*1x\r\n", p + "bad multibulk count at stream byte 0: '*1x'"},
      {"* 1\r\n", p + "bad multibulk count at stream byte 0: '* 1'"},
      {"*18446744073709551616\r\n",  // UINT64_MAX + 1
       p + "bad multibulk count at stream byte 0: '*18446744073709551616'"},
      {"*99999999999999999999\r\n",
       p + "bad multibulk count at stream byte 0: '*99999999999999999999'"},
      {"*1\n$4\r\nPING\r\n", p + "bad multibulk count at stream byte 0: '*1\\n'"},
      {"*1\rx$4\r\nPING\r\n", p + "bad multibulk count at stream byte 0: '*1\\rx'"},
      {"*" + std::string(40, '1') + "\r\n",
       p + "bad multibulk count at stream byte 0: '*1111111111111111111111111111111...'"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(c.stream), c.error) << c.stream;
}

TEST(RespParserTest, MalformedBulks) {
  const std::string p = "RESP command stream: ";
  const Bad cases[] = {
      {"*1\r\n$abc\r\n", p + "bad bulk length at stream byte 4: '$abc'"},
      {"*1\r\n$-1\r\n", p + "bad bulk length at stream byte 4: '$-1'"},
      {"*1\r\n$+4\r\nPING\r\n", p + "bad bulk length at stream byte 4: '$+4'"},
      {"*1\r\n$04\r\nPING\r\n", p + "bad bulk length at stream byte 4: '$04'"},
      {"*1\r\n$\r\n", p + "bad bulk length at stream byte 4: '$'"},
      {"*1\r\n$4 \r\nPING\r\n", p + "bad bulk length at stream byte 4: '$4 '"},
      {"*1\r\n$99999999999999999999\r\n",
       p + "bad bulk length at stream byte 4: '$99999999999999999999'"},
      {"*1\r\n$4\nPING\r\n", p + "bad bulk length at stream byte 4: '$4\\n'"},
      {"*1\r\n$\x01\xff\r\n", p + "bad bulk length at stream byte 4: '$\\x01\\xff'"},
      {"*1\r\n$" + std::string(40, '4') + "\r\n",
       p + "bad bulk length at stream byte 4: '$4444444444444444444444444444444...'"},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n",
       p + "expected a bulk string ('$') at stream byte 20: 'fooz'"},
      {"*1\r\n\r\n", p + "expected a bulk string ('$') at stream byte 4: '\\r\\n'"},
      {"*1\r\n:1\r\n", p + "expected a bulk string ('$') at stream byte 4: ':1'"},
      {"*2\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n",
       p + "expected a bulk string ('$') at stream byte 14: '*1'"},
      {"*1\r\n$4\r\nPINGxx",
       p + "missing \\r\\n after a bulk string of 4 bytes at stream byte 12: 'xx'"},
      {"*1\r\n$4\r\nPING\rx",
       p + "missing \\r\\n after a bulk string of 4 bytes at stream byte 12: '\\rx'"},
      {"*1\r\n$4\r\nPINGS\r\n",
       p + "missing \\r\\n after a bulk string of 4 bytes at stream byte 12: 'S\\r'"},
      {"*1\r\n$0\r\n\n\n",
       p + "missing \\r\\n after a bulk string of 0 bytes at stream byte 8: '\\n\\n'"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(c.stream), c.error) << c.stream;
}

TEST(RespParserTest, InlineCommandsAreRefused) {
  const std::string p = "RESP command stream: a line that is not a command at stream byte ";
  const std::string why = " (only '*' multibulk commands belong in a replication stream, "
                          "with empty lines between them)";
  const std::string ping = encode({"PING"});
  EXPECT_EQ(error_of("PING\r\n"), p + "0: 'PING'" + why);
  EXPECT_EQ(error_of("PING\n"), p + "0: 'PING\\n'" + why);
  EXPECT_EQ(error_of(ping + "+OK\r\n"), p + "14: '+OK'" + why);
  EXPECT_EQ(error_of("\n\r\n" + ping + " \r\n"), p + "17: ' '" + why);
  EXPECT_EQ(error_of("\rx"), p + "0: '\\rx'" + why);
  EXPECT_EQ(error_of("$5\r\nhello\r\n"), p + "0: '$5'" + why);
  EXPECT_EQ(error_of(std::string(100, 'A')), p + "0: '" + std::string(32, 'A') + "...'" + why);
}

TEST(RespParserTest, OffsetsCountFromTheFirstByteEverFed) {
  std::string stream;
  for (int i = 0; i < 100; ++i) stream += "\n" + encode({"SET", "k", std::string(i, 'v')});
  size_t bad = stream.size() + 4;
  stream += "*1\r\n$x\r\n";
  EXPECT_EQ(error_of(stream), "RESP command stream: bad bulk length at stream byte " +
                                  std::to_string(bad) + ": '$x'");
}

TEST(RespParserTest, LinesAreJudgedWhenCompleteNotOnAPrefix) {
  // An unfinished line is not an error yet, however wrong it starts.
  for (std::string s : {"PIN", "*-", "*1\r\n$ab", "*1\r\n$4\r\nPING\r", "*1\r\n$4\r\nPING"}) {
    Outcome o = parse_whole(s);
    EXPECT_EQ(o.error, "") << s;
    EXPECT_EQ(o.buffered, s.size()) << s;
  }
}

TEST(RespParserTest, ErrorsAreSticky) {
  CommandParser p;
  std::string ok = encode({"PING"});
  p.feed(ok + "*1\r\n$-1\r\n");
  auto first = p.next();
  ASSERT_TRUE(first.ok() && *first);
  auto e = p.next();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().kind(), ErrorKind::kBadData);
  uint64_t consumed = p.consumed();
  size_t buffered = p.buffered();
  p.feed(ok);  // dropped
  auto again = p.next();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), e.status().message());
  EXPECT_EQ(p.consumed(), consumed);
  EXPECT_EQ(p.buffered(), buffered);
}

// --- Limits: they trip on the declared numbers, before the bytes arrive ----

TEST(RespParserTest, MaxArgs) {
  Limits l{.max_args = 3};
  EXPECT_EQ(parse_whole(encode({"a", "b", "c"}), l).commands.size(), 1u);
  std::string e = error_of("*4\r\n", l);  // nothing else fed: fails at once
  EXPECT_EQ(e, "RESP command stream: multibulk count 4 at stream byte 0 is above "
               "resp::Limits::max_args (3)");
  // Defaults: Redis's INT_MAX; a count below it fails on max_command_bytes.
  EXPECT_NE(error_of("*2147483648\r\n").find("max_args (2147483647)"), std::string::npos);
  e = error_of("*200000000\r\n");
  EXPECT_NE(e.find("a command at stream byte 0 of at least 1200000012 bytes is above "
                   "resp::Limits::max_command_bytes (1073741824)"),
            std::string::npos)
      << e;
}

TEST(RespParserTest, MaxBulkBytes) {
  Limits l{.max_bulk_bytes = 10};
  EXPECT_EQ(parse_whole(encode({"SET", "k", std::string(10, 'v')}), l).commands.size(), 1u);
  std::string e = error_of("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\n", l);  // no body fed
  EXPECT_EQ(e, "RESP command stream: bulk length 11 at stream byte 20 is above "
               "resp::Limits::max_bulk_bytes (10)");
  // Defaults: proto-max-bulk-len's 512 MiB. At the limit it waits for the
  // bytes, holding only what was fed.
  EXPECT_NE(error_of("*1\r\n$536870913\r\n").find("max_bulk_bytes (536870912)"), std::string::npos);
  Outcome o = parse_whole("*1\r\n$536870912\r\nabc");
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.buffered, 19u);
}

TEST(RespParserTest, MaxCommandBytes) {
  std::string cmd = encode({"SET", "key", std::string(100, 'v')});
  Limits exact{.max_command_bytes = cmd.size()};
  EXPECT_EQ(parse_whole(cmd + cmd, exact).commands.size(), 2u);
  Limits less{.max_command_bytes = cmd.size() - 1};
  // Fails on the last header, before the value arrives.
  std::string headers = cmd.substr(0, cmd.find("$100\r\n") + 6);
  std::string e = error_of(headers, less);
  EXPECT_EQ(e, "RESP command stream: a command at stream byte 0 of at least " +
                   std::to_string(cmd.size()) +
                   " bytes is above resp::Limits::max_command_bytes (" +
                   std::to_string(cmd.size() - 1) + ")");
  // The arguments still to come count at their least (6 bytes, "$0\r\n\r\n").
  Limits small{.max_command_bytes = 100};
  EXPECT_NE(error_of("*16\r\n", small).find("at least 101 bytes"), std::string::npos);
  EXPECT_EQ(error_of("*15\r\n", small), "");
  EXPECT_EQ(error_of("*2\r\n$83\r\n", small), "");
  EXPECT_NE(error_of("*2\r\n$84\r\n", small).find("at least 101 bytes"), std::string::npos);
  // The offset is the command's start, after earlier commands.
  e = error_of(cmd + "\n" + cmd, less);
  EXPECT_NE(e.find("a command at stream byte 0 "), std::string::npos) << e;
  e = error_of(cmd + "\n" + cmd, exact);
  EXPECT_EQ(e, "");
  Limits tiny{.max_command_bytes = 20};
  e = error_of(encode({"PING"}) + "\n" + cmd, tiny);
  EXPECT_NE(e.find("a command at stream byte 15 "), std::string::npos) << e;
}

// --- Linear time ------------------------------------------------------------

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(RespParserTest, LargeBulkInSmallPiecesIsLinear) {
  // 16 MiB in 64-byte pieces: 262,144 feeds. A parser that looked at the
  // command again from its start on every feed would touch ~2^41 bytes.
  const size_t size = 16 << 20;
  std::string stream = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + std::to_string(size) + "\r\n";
  stream.append(size, 'v');
  stream += "\r\n" + encode({"PING"});
  auto t0 = std::chrono::steady_clock::now();
  CommandParser p;
  int commands = 0;
  for (size_t at = 0; at < stream.size(); at += 64) {
    p.feed(std::string_view(stream).substr(at, 64));
    while (true) {
      auto c = p.next();
      ASSERT_TRUE(c.ok()) << c.status().message();
      if (!*c) break;
      if (++commands == 1) {
        EXPECT_EQ((*c)->args[2].size(), size);
      }
    }
  }
  double s = seconds_since(t0);
  EXPECT_EQ(commands, 2);
  EXPECT_EQ(p.consumed(), stream.size());
  EXPECT_LT(s, 5.0);  // a few tens of ms in fact; ctest's timeout is 60 s
  std::printf("16 MiB bulk in 64-byte feeds: %.3f s\n", s);
}

TEST(RespParserTest, ManyArgumentsInSmallPiecesIsLinear) {
  // 200,000 arguments (1.4 MB) in 7-byte pieces: resuming from the command's
  // start on every feed would walk ~2 * 10^10 argument headers.
  const size_t n = 200000;
  std::string stream = "*" + std::to_string(n + 1) + "\r\n$4\r\nSADD\r\n";
  for (size_t i = 0; i < n; ++i)
    stream += "$1\r\n" + std::string(1, static_cast<char>('a' + i % 26)) + "\r\n";
  auto t0 = std::chrono::steady_clock::now();
  CommandParser p;
  int commands = 0;
  for (size_t at = 0; at < stream.size(); at += 7) {
    p.feed(std::string_view(stream).substr(at, 7));
    auto c = p.next();
    ASSERT_TRUE(c.ok()) << c.status().message();
    if (*c) {
      ++commands;
      ASSERT_EQ((*c)->args.size(), n + 1);
      EXPECT_EQ((*c)->args[0], "SADD");
      EXPECT_EQ((*c)->args[n], std::string(1, static_cast<char>('a' + (n - 1) % 26)));
      EXPECT_EQ((*c)->stream_bytes, stream.size());
    }
  }
  double s = seconds_since(t0);
  EXPECT_EQ(commands, 1);
  EXPECT_EQ(p.consumed(), stream.size());
  EXPECT_LT(s, 5.0);
  std::printf("200,000 arguments in 7-byte feeds: %.3f s\n", s);
  // The next command reuses (and here gives back) the argument array.
  p.feed(encode({"DEL", "k"}));
  auto c = p.next();
  ASSERT_TRUE(c.ok() && *c);
  EXPECT_EQ(std::vector<std::string_view>((*c)->args.begin(), (*c)->args.end()),
            (std::vector<std::string_view>{"DEL", "k"}));
}

TEST(RespParserTest, SmallCommandsAfterABigOne) {
  // A big command grows the buffer; it shrinks back afterwards, and the
  // commands after it (and views into them) must not notice.
  std::string big = encode({"SET", "big", std::string(4 << 20, 'b')});
  std::string small = encode({"SET", "k", "v"});
  std::string stream = big + small + small;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    std::mt19937 rng(seed);
    Outcome o = parse(stream, [&] { return rng() % 2 ? big.size() + rng() % 100 : rng() % 100; });
    ASSERT_EQ(o.error, "");
    ASSERT_EQ(o.commands.size(), 3u);
    EXPECT_EQ(o.commands[0][2].size(), size_t{4} << 20);
    EXPECT_EQ(o.commands[2], (Args{"SET", "k", "v"}));
  }
}

}  // namespace
}  // namespace rrs::resp
