// RunCommand with real programs (sh, cat): what it gives a command and what it waits for.
#include "common/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(RunCommandTest, CollectsOutputAndExitCode) {
  absl::StatusOr<CommandResult> result = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "out\n");
  EXPECT_EQ(result->err, "err\n");
  EXPECT_EQ(result->exit_code, 3);
}

TEST(RunCommandTest, AddsVariablesOverThisProcesssOwn) {
  setenv("RUN_COMMAND_TEST_KEPT", "kept", 1);
  setenv("RUN_COMMAND_TEST_REPLACED", "old", 1);
  CommandOptions options;
  options.environment = {"RUN_COMMAND_TEST_REPLACED=new", "RUN_COMMAND_TEST_ADDED=added"};
  absl::StatusOr<CommandResult> result = RunCommand(
      {"sh", "-c",
       "echo $RUN_COMMAND_TEST_KEPT $RUN_COMMAND_TEST_REPLACED $RUN_COMMAND_TEST_ADDED; env | grep "
       "-c RUN_COMMAND_TEST_REPLACED"},
      options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "kept new added\n1\n");  // replaced, not given twice
}

TEST(RunCommandTest, GivesItsInput) {
  CommandOptions options;
  options.input = "quit\n";
  absl::StatusOr<CommandResult> result = RunCommand({"cat"}, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "quit\n");
}

// Input is a command or two; a child that exits unread leaves this process standing (no SIGPIPE:
// common_test does not ignore it, as traind does).
TEST(RunCommandTest, InputIsBoundedAndNeverKillsTheCaller) {
  CommandOptions options;
  options.input = std::string(kMaxCommandInput + 1, 'x');
  EXPECT_EQ(RunCommand({"cat"}, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.input = std::string(kMaxCommandInput, 'x');
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<CommandResult> result = RunCommand({"true"}, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->exit_code, 0);
  }
}

TEST(RunCommandTest, WithoutInputItReadsNothing) {
  absl::StatusOr<CommandResult> result = RunCommand({"cat"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out, "");
}

// A command that leaves a daemon behind (nvidia-cuda-mps-control -d) returns when it exits,
// though the daemon keeps the output it was given.
class RunCommandDaemonTest : public testing::Test {
 protected:
  ~RunCommandDaemonTest() override {
    if (lingering_ > 0) kill(lingering_, SIGKILL);
  }
  pid_t lingering_ = 0;  // what the command left running
};

TEST_F(RunCommandDaemonTest, DiscardedOutputIsNotWaitedForPastTheCommand) {
  CommandOptions options;
  options.discard_output = true;
  options.timeout = absl::Seconds(20);
  char pid_file[] = "/tmp/run-command-test.XXXXXX";
  ASSERT_GE(mkstemp(pid_file), 0);
  const absl::Time start = absl::Now();
  absl::StatusOr<CommandResult> result = RunCommand(
      {"sh", "-c", std::string("sleep 30 & echo $! >") + pid_file + "; echo started"}, options);
  const absl::Duration took = absl::Now() - start;
  std::ifstream(pid_file) >> lingering_;
  unlink(pid_file);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->out, "");
  EXPECT_LT(took, absl::Seconds(20));  // not the timeout: it ended at once
}

TEST(RunCommandTest, AProgramNotFoundIsNotFound) {
  EXPECT_EQ(RunCommand({"no-such-program-anywhere"}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace traind
