// The commands restore mode writes records with (client/restore/
// restore_command.h): which records go as plain strings, and the RESP bytes
// of SET and MSET. That the target ends up with the same keys as RESTORE
// gives is tested against real servers (sync_test, version_matrix_test).
#include "client/restore/restore_command.h"

#include <gtest/gtest.h>

#include <string>

#include "proto/dump_payload.h"
#include "proto/rdb_format.h"
#include "tests/support/rdb_bytes.h"

namespace rrs {
namespace {

using namespace std::string_literals;

std::string payload(uint8_t type, const std::string& value) {
  std::string out(dump::payload_size(value.size()), '\0');
  dump::write_payload(type, value, 10, out.data());
  return out;
}

TEST(RestoreCommandTest, OnlySmallWellFormedStringsArePlain) {
  std::string scratch;
  EXPECT_EQ(plain_string(payload(rdb::kString, test::str("v")), scratch), "v");
  EXPECT_EQ(plain_string(payload(rdb::kString, "\xc0\x07"s), scratch), "7");
  EXPECT_FALSE(plain_string(payload(rdb::kList, test::str("v")), scratch));
  EXPECT_FALSE(plain_string(payload(rdb::kString, test::str("v") + "x"), scratch));
  EXPECT_FALSE(plain_string("\x00"s, scratch));  // no trailer
  const std::string big(kPlainStringMax + 1, 'b');
  EXPECT_FALSE(plain_string(payload(rdb::kString, test::str(big)), scratch));
  const std::string largest(kPlainStringMax, 'b');
  EXPECT_EQ(plain_string(payload(rdb::kString, test::str(largest)), scratch), largest);
}

TEST(RestoreCommandTest, SetCarriesAnAbsoluteTtl) {
  std::string out;
  append_set(out, "k", -1, "v");
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
  out.clear();
  append_set(out, "k\r\n", 1700000000123, "");
  EXPECT_EQ(out,
            "*5\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n$4\r\nPXAT\r\n$13\r\n1700000000123\r\n");
}

TEST(RestoreCommandTest, RecordsPickTheirCommand) {
  std::string out, scratch;
  EXPECT_STREQ(append_record(out, "k", -1, payload(rdb::kString, test::str("v")), scratch), "SET");
  EXPECT_STREQ(append_record(out, "k", -1, payload(rdb::kList, test::str("v")), scratch),
               "RESTORE");
}

TEST(RestoreCommandTest, MsetHoldsEveryPairUntilFlushed) {
  MsetBuilder m;
  std::string out;
  m.flush_into(out);
  EXPECT_TRUE(out.empty());  // nothing added, nothing sent
  m.add("a", "1");
  m.add("b\0"s, "");
  EXPECT_EQ(m.keys(), 2u);
  m.flush_into(out);
  EXPECT_EQ(out, "*5\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nb\0\r\n$0\r\n\r\n"s);
  EXPECT_TRUE(m.empty());
  size_t added = 0;
  while (!m.full()) m.add("k", "v"), ++added;
  EXPECT_GT(added, 1u);
  const std::string large(size_t{300} * 1024, 'x');
  MsetBuilder one;
  one.add("k", large);
  EXPECT_TRUE(one.full());  // bytes bound it too
}

}  // namespace
}  // namespace rrs
