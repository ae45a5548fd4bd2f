// LowerPriorityFromEnvironment on real threads: a nice value is per thread on Linux, and the call
// must lower every thread of the process, not only its caller. (A priority once lowered cannot be
// raised again without privileges: each case compares before with after.)
#include "worker/priority.h"

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace traind {
namespace {

struct Outcome {
  absl::Status status;
  int before = 0, after = 0;
};

// Sets TRAIND_WORKER_NICE (unset for nullptr), lowers a new thread's priority, reports.
Outcome InAThread(const char* value) {
  if (value == nullptr) {
    unsetenv("TRAIND_WORKER_NICE");
  } else {
    setenv("TRAIND_WORKER_NICE", value, 1);
  }
  Outcome outcome;
  std::thread([&] {
    outcome.before = CurrentNice();
    outcome.status = LowerPriorityFromEnvironment();
    outcome.after = CurrentNice();
  }).join();
  unsetenv("TRAIND_WORKER_NICE");
  return outcome;
}

TEST(WorkerPriorityTest, AddsTheIncrementToEveryThreadOfTheProcess) {
  // A thread that exists before the call and does not make it (as LibTorch's do).
  std::atomic<bool> done{false};
  std::atomic<int> bystander{-100};
  std::thread waiting([&] {
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    bystander = CurrentNice();
  });
  Outcome three = InAThread("3");
  done = true;
  waiting.join();
  EXPECT_EQ(bystander.load(), three.after) << "a thread that was already running";
  ASSERT_TRUE(three.status.ok()) << three.status;
  EXPECT_EQ(three.after, std::min(19, three.before + 3));
  EXPECT_EQ(CurrentNice(), three.after) << "the thread that started the caller changes too";
  // A thread started afterwards inherits it.
  int later = -1;
  std::thread([&] { later = CurrentNice(); }).join();
  EXPECT_EQ(later, three.after);
}

TEST(WorkerPriorityTest, NothingOrZeroLeavesThePriority) {
  for (const char* value : {static_cast<const char*>(nullptr), "", "0"}) {
    Outcome outcome = InAThread(value);
    EXPECT_TRUE(outcome.status.ok()) << outcome.status;
    EXPECT_EQ(outcome.after, outcome.before);
  }
}

TEST(WorkerPriorityTest, StopsAtNineteen) {
  Outcome outcome = InAThread("19");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.after, 19);
}

TEST(WorkerPriorityTest, RefusesWhatIsNotAnIncrement) {
  for (const char* value : {"-5", "20", "ten", "3x", "99999999999"}) {
    Outcome outcome = InAThread(value);
    EXPECT_EQ(outcome.status.code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_NE(outcome.status.message().find("TRAIND_WORKER_NICE"), std::string::npos);
    EXPECT_EQ(outcome.after, outcome.before) << value;
  }
}

}  // namespace
}  // namespace traind
