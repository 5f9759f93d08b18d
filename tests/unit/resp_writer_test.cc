// The RESP encoder: what it writes is what Redis reads, and our own parser
// reads it back the same (binary-safe, empty arguments, pipelines).
#include "proto/resp_writer.h"

#include <gtest/gtest.h>

#include "proto/resp_parser.h"

namespace rrs::resp {
namespace {

TEST(RespWriter, CommandIsAnArrayOfBulkStrings) {
  EXPECT_EQ(command({"SET", "k", "v"}), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  EXPECT_EQ(command({"PING"}), "*1\r\n$4\r\nPING\r\n");
}

TEST(RespWriter, BinarySafeAndEmptyArguments) {
  const std::string binary("a\0\r\nb", 5);
  EXPECT_EQ(command({"SET", binary, ""}),
            std::string("*3\r\n$3\r\nSET\r\n$5\r\na\0\r\nb\r\n$0\r\n\r\n", 30));
}

TEST(RespWriter, AppendsAPipelineOurParserReadsBack) {
  std::string out;
  append_command(out, {"SELECT", "3"});
  append_command(out, {"RESTORE", "key", "0", std::string(1000, 'x'), "REPLACE", "ABSTTL"});
  CommandParser parser;
  parser.feed(std::string_view(out));
  auto first = parser.next();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->args.size(), 2u);
  auto second = parser.next();
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(second->has_value());
  ASSERT_EQ((*second)->args.size(), 6u);
  EXPECT_EQ((*second)->args[3].size(), 1000u);
}

TEST(RespWriter, WriteBulkLaysOutWhatAppendBulkAppends) {
  for (const std::string& bytes : {std::string(), std::string("a\0\r\n", 4), std::string(9, 'x'),
                                   std::string(10, 'y'), std::string(1000, 'z')}) {
    std::string appended;
    append_bulk(appended, bytes);
    EXPECT_EQ(bulk_size(bytes), appended.size());
    std::string written(bulk_size(bytes), '?');
    EXPECT_EQ(write_bulk(written.data(), bytes), written.data() + written.size());
    EXPECT_EQ(written, appended);
  }
}

}  // namespace
}  // namespace rrs::resp
