#include "engine/worker_readiness.h"

#include <time.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

// The process's age comes from the kernel's record of its start: positive, under a day for a
// test, and it grows.
TEST(WorkerReadinessTest, AProcessKnowsHowLongAgoItStarted) {
#ifdef __linux__
  const std::optional<double> first = ProcessAgeSeconds();
  ASSERT_TRUE(first.has_value());
  EXPECT_GE(*first, 0.0);
  EXPECT_LT(*first, 86400.0);
  // The kernel counts in clock ticks (10 ms): wait out more than one.
  const timespec pause{0, 30'000'000};
  nanosleep(&pause, nullptr);
  const std::optional<double> later = ProcessAgeSeconds();
  ASSERT_TRUE(later.has_value());
  EXPECT_GT(*later, *first);
#else
  EXPECT_FALSE(ProcessAgeSeconds().has_value());
#endif
}

TEST(WorkerReadinessTest, OnlyAWorkerNotesItsReadiness) {
  EXPECT_FALSE(NotedWorkerReadiness().has_value());  // a test is no worker
  NoteWorkerReadiness({1.25, 0.5});
  ASSERT_TRUE(NotedWorkerReadiness().has_value());
  EXPECT_DOUBLE_EQ(NotedWorkerReadiness()->ready_after_seconds, 1.25);
  EXPECT_DOUBLE_EQ(NotedWorkerReadiness()->idle_seconds, 0.5);
}

}  // namespace
}  // namespace traind
