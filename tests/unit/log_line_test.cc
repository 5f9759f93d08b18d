// The two log formats (common/base/log_line.h): exact text lines, and JSON
// lines that stay valid whatever bytes a message holds (a peer's bytes can
// reach a message).
#include "common/base/log_line.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace rrs::log {
namespace {

using namespace std::string_literals;

// 2026-11-25T23:46:38.123Z
const auto kWhen = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795650398123));

TEST(LogLineTest, TimestampIsRfc3339UtcWithMilliseconds) {
  EXPECT_EQ(rfc3339_utc(kWhen), "2026-11-25T23:46:38.123Z");
  EXPECT_EQ(rfc3339_utc(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339_utc(kWhen - std::chrono::milliseconds(123) + std::chrono::milliseconds(7)),
            "2026-11-25T23:46:38.007Z");
}

TEST(LogLineTest, TextLine) {
  EXPECT_EQ(format_line(Format::kText, kWhen, "rdma-server", Level::kWarn,
                        "client 1.2.3.4 refused"),
            "2026-11-25T23:46:38.123Z rdma-server WARN client 1.2.3.4 refused\n");
  EXPECT_EQ(format_line(Format::kText, kWhen, "rdma-client", Level::kInfo, "x"),
            "2026-11-25T23:46:38.123Z rdma-client INFO x\n");
  EXPECT_EQ(format_line(Format::kText, kWhen, "rdma-client", Level::kError, "x"),
            "2026-11-25T23:46:38.123Z rdma-client ERROR x\n");
}

TEST(LogLineTest, TextKeepsOneRecordOnOneLine) {
  EXPECT_EQ(format_line(Format::kText, kWhen, "p", Level::kWarn, "a\nb\r\0c\x7f"s),
            "2026-11-25T23:46:38.123Z p WARN a\\x0ab\\x0d\\x00c\\x7f\n");
  // Quotes, backslashes and UTF-8 pass as they are.
  EXPECT_EQ(format_line(Format::kText, kWhen, "p", Level::kWarn, "'\"\\ é"),
            "2026-11-25T23:46:38.123Z p WARN '\"\\ é\n");
}

TEST(LogLineTest, JsonLine) {
  EXPECT_EQ(format_line(Format::kJson, kWhen, "rdma-server", Level::kWarn, "handshake refused"),
            R"({"ts":"2026-11-25T23:46:38.123Z","level":"warn","program":"rdma-server",)"
            R"("msg":"handshake refused"})"
            "\n");
  EXPECT_NE(format_line(Format::kJson, kWhen, "p", Level::kInfo, "").find(R"("level":"info")"),
            std::string::npos);
  EXPECT_NE(format_line(Format::kJson, kWhen, "p", Level::kError, "").find(R"("level":"error")"),
            std::string::npos);
}

TEST(LogLineTest, JsonEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_string("say \"hi\" \\ now"), R"("say \"hi\" \\ now")");
  EXPECT_EQ(json_string("a\nb\rc\td"), R"("a\nb\rc\td")");
  EXPECT_EQ(json_string("\0\x01\x1f\x7f"s), R"("\u0000\u0001\u001f\u007f")");
}

TEST(LogLineTest, JsonKeepsValidUtf8AndEscapesEveryOtherHighByte) {
  EXPECT_EQ(json_string("é€😀"), "\"é€😀\"");
  EXPECT_EQ(json_string("\xff"), R"("\u00ff")");
  EXPECT_EQ(json_string("a\xc3"), R"("a\u00c3")");                              // cut sequence
  EXPECT_EQ(json_string("\xc0\xaf"), R"("\u00c0\u00af")");                      // overlong '/'
  EXPECT_EQ(json_string("\xed\xa0\x80"), R"("\u00ed\u00a0\u0080")");            // a surrogate
  EXPECT_EQ(json_string("\xf4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");  // > U+10FFFF
  EXPECT_EQ(json_string("\x80x"), R"("\u0080x")");  // a lone continuation
}

// Every byte value, alone and after each other one, makes a line with only
// printable ASCII or valid UTF-8 between its quotes, and no raw '"' or '\'
// that is not part of an escape: checked by decoding it back.
std::string decode_json_string(const std::string& lit, bool& ok) {
  std::string out;
  ok = lit.size() >= 2 && lit.front() == '"' && lit.back() == '"';
  for (size_t i = 1; ok && i + 1 < lit.size(); ++i) {
    const auto c = static_cast<unsigned char>(lit[i]);
    if (c < 0x20 || c == '"') {
      ok = false;
    } else if (c == '\\') {
      if (i + 1 >= lit.size() - 1) return ok = false, out;
      const char e = lit[++i];
      if (e == 'u') {
        if (i + 4 >= lit.size() - 1 || lit.substr(i + 1, 2) != "00") return ok = false, out;
        out.push_back(static_cast<char>(std::stoi(lit.substr(i + 3, 2), nullptr, 16)));
        i += 4;
      } else if (e == 'n') {
        out.push_back('\n');
      } else if (e == 'r') {
        out.push_back('\r');
      } else if (e == 't') {
        out.push_back('\t');
      } else if (e == '"' || e == '\\') {
        out.push_back(e);
      } else {
        ok = false;
      }
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

TEST(LogLineTest, JsonRoundTripsEveryAsciiAndHighBytePair) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string in{static_cast<char>(a), static_cast<char>(b)};
      bool ok = false;
      const std::string lit = json_string(in);
      const std::string back = decode_json_string(lit, ok);
      ASSERT_TRUE(ok) << a << " " << b << ": " << lit;
      // A byte escaped as \u00XX decodes to XX; a valid UTF-8 pair passes as is.
      ASSERT_EQ(back, in) << a << " " << b << ": " << lit;
    }
  }
}

TEST(LogLineTest, ParseFormat) {
  EXPECT_EQ(parse_format("text"), Format::kText);
  EXPECT_EQ(parse_format("json"), Format::kJson);
  EXPECT_EQ(parse_format("JSON"), std::nullopt);
  EXPECT_EQ(parse_format(""), std::nullopt);
}

}  // namespace
}  // namespace rrs::log
