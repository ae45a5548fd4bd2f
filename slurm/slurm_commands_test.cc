#include "slurm/slurm_commands.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(RunCommandTest, CollectsOutputErrorAndExitCode) {
  absl::StatusOr<CommandResult> result = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
  EXPECT_EQ(result->exit_code, 3);
}

// The arguments reach the program as they are: nothing is read by a shell.
TEST(RunCommandTest, ArgumentsAreNotInterpreted) {
  absl::StatusOr<CommandResult> result = RunCommand({"echo", "$(id)", "a;b", "'q'"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "$(id) a;b 'q'\n");
}

TEST(RunCommandTest, AMissingProgramIsNotFoundAndASlowOneIsStopped) {
  EXPECT_EQ(RunCommand({"no-such-program-traind"}).status().code(), absl::StatusCode::kNotFound);
  const absl::Time began = absl::Now();
  EXPECT_EQ(RunCommand({"sleep", "30"}, absl::Milliseconds(200)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - began, absl::Seconds(10));
}

// A cancel must not wait for a slow Slurm command: the stop flag kills it within ~100 ms.
TEST(RunCommandTest, AStopKillsTheCommand) {
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const absl::Time began = absl::Now();
  EXPECT_EQ(RunCommand({"sleep", "30"}, absl::Seconds(60), &stop).status().code(),
            absl::StatusCode::kCancelled);
  EXPECT_LT(absl::Now() - began, absl::Seconds(10));
  stopper.join();
}

// A child that closes its output and goes on running is not waited for past the deadline.
TEST(RunCommandTest, AChildThatClosesItsPipesIsStillBoundByTheDeadline) {
  const absl::Time began = absl::Now();
  EXPECT_EQ(
      RunCommand({"sh", "-c", "exec >&- 2>&-; sleep 30"}, absl::Milliseconds(300)).status().code(),
      absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - began, absl::Seconds(10));
}

TEST(SlurmCommandsTest, ParsesSbatchParsableOutput) {
  EXPECT_EQ(*ParseSbatchJobId("1234\n"), 1234);
  EXPECT_EQ(*ParseSbatchJobId("99;cluster-a\n"), 99);
  EXPECT_FALSE(ParseSbatchJobId("sbatch: error: Batch job submission failed").ok());
  EXPECT_FALSE(ParseSbatchJobId("").ok());
}

TEST(SlurmCommandsTest, FinalStatesAreTheOnesSlurmDoesNotLeave) {
  for (const char* active : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED"}) {
    EXPECT_FALSE(IsFinalSlurmState(active)) << active;
  }
  for (const char* final : {"COMPLETED", "CANCELLED", "CANCELLED by 0", "FAILED", "TIMEOUT",
                            "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"}) {
    EXPECT_TRUE(IsFinalSlurmState(final)) << final;
  }
  EXPECT_FALSE(IsFinalSlurmState(""));
}

}  // namespace
}  // namespace traind
