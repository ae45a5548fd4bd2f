#include "common/proc_file.h"

#include <time.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

// The one parser of /proc/PID/stat reads this process's own line: its parent, its CPU time and
// when it started.
TEST(ProcFileTest, ReadsThisProcesssStatLine) {
#ifdef __linux__
  const std::optional<ProcStat> stat = ReadProcStat(getpid());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->parent, getppid());
  EXPECT_EQ(stat->state, 'R');
  EXPECT_GT(stat->start_ticks, 0u);
#else
  GTEST_SKIP() << "no /proc here";
#endif
}

// The process's age: positive, under a day for a test, and it grows (the kernel counts its start
// in clock ticks of 10 ms: more than one is waited out).
TEST(ProcFileTest, AProcessKnowsHowLongAgoItStarted) {
#ifdef __linux__
  const std::optional<double> first = ProcessAgeSeconds();
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(*first, 0.0);
  EXPECT_LT(*first, 86400.0);
  const timespec pause{0, 30'000'000};
  nanosleep(&pause, nullptr);
  const std::optional<double> later = ProcessAgeSeconds();
  ASSERT_TRUE(later.has_value());
  EXPECT_GT(*later, *first);
#else
  EXPECT_FALSE(ProcessAgeSeconds().has_value());
#endif
}

}  // namespace
}  // namespace traind
