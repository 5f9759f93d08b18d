// How much of an epoch being written verbs registers (verbs::prefix_to_register):
// a step ahead of the writer, growing with what is registered, never past
// the room; once complete, exactly the table. Pure arithmetic on a Table.
#include <gtest/gtest.h>

#include "common/transport/verbs/protection.h"

namespace rrs::verbs {
namespace {

constexpr uint64_t kKiB = 1024, kMiB = kKiB * kKiB;
constexpr uint64_t kStep = 64 * kMiB;

// A streamed epoch's Table with `room` bytes of address space, `written` of it written.
std::shared_ptr<Table> streamed(uint64_t room, uint64_t written) {
  auto t = std::make_shared<Table>();
  auto bytes = PageBuffer::reserve(room);
  EXPECT_TRUE(bytes.ok());
  t->bytes = std::move(*bytes);
  t->header.state = table::State::kBuilding;
  t->header.total_size = room;
  t->written = written;
  return t;
}

TEST(RegistrationGrowth, FirstPrefixIsAStepAheadOfTheWriter) {
  auto t = streamed(4096 * kMiB, 10 * kMiB);
  EXPECT_EQ(prefix_to_register(*t, 0, kStep), 74 * kMiB);
  // Rounded up to 2 MiB.
  t->written = 10 * kMiB + 1;
  EXPECT_EQ(prefix_to_register(*t, 0, kStep), 76 * kMiB);
}

TEST(RegistrationGrowth, GrowsOnlyWhenTheWriterNearsTheEnd) {
  auto t = streamed(4096 * kMiB, 40 * kMiB);
  EXPECT_EQ(prefix_to_register(*t, 74 * kMiB, kStep), 0u) << "half a step still ahead";
  t->written = 43 * kMiB;  // within half a step (32 MiB) of 74 MiB
  EXPECT_EQ(prefix_to_register(*t, 74 * kMiB, kStep), 138 * kMiB);
}

TEST(RegistrationGrowth, StepGrowsWithWhatIsRegistered) {
  auto t = streamed(8192 * kMiB, 1000 * kMiB);
  // Half of 1024 MiB more.
  EXPECT_EQ(prefix_to_register(*t, 1024 * kMiB, kStep), 1536 * kMiB);
  uint64_t registered = 0, sum = 0;
  for (uint64_t w = 0; w <= 4096 * kMiB; w += kMiB) {
    t->written = w;
    if (uint64_t next = prefix_to_register(*t, registered, kStep)) {
      EXPECT_GE(next, w);
      registered = next;
      sum += next;
    }
  }
  // Each prefix 1.5 times the last: together three times the last, which
  // is less than twice what was written.
  EXPECT_LE(sum, 3 * registered);
  EXPECT_LT(registered, 8192 * kMiB);
}

TEST(RegistrationGrowth, NeverPastTheRoom) {
  auto t = streamed(100 * kMiB, 90 * kMiB);
  EXPECT_EQ(prefix_to_register(*t, 64 * kMiB, kStep), 100 * kMiB);
  EXPECT_EQ(prefix_to_register(*t, 100 * kMiB, kStep), 0u);
}

TEST(RegistrationGrowth, CompleteTableIsRegisteredToItsEnd) {
  auto t = streamed(4096 * kMiB, 300 * kMiB);
  t->completed_size = 301 * kMiB + 4096;  // the DB directory after the heap
  EXPECT_EQ(prefix_to_register(*t, 300 * kMiB, kStep), 301 * kMiB + 4096);
  EXPECT_EQ(prefix_to_register(*t, 400 * kMiB, kStep), 0u) << "a longer prefix covers it";
}

TEST(RegistrationGrowth, SmallStepsForTests) {
  auto t = streamed(4 * kMiB, 100 * kKiB);
  EXPECT_EQ(prefix_to_register(*t, 0, 64 * kKiB), 164 * kKiB);
  EXPECT_EQ(prefix_to_register(*t, 164 * kKiB, 64 * kKiB), 0u);
  t->written = 140 * kKiB;
  EXPECT_EQ(prefix_to_register(*t, 164 * kKiB, 64 * kKiB), 248 * kKiB);
}

}  // namespace
}  // namespace rrs::verbs
