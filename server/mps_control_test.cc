// MpsControl with a stand-in for nvidia-cuda-mps-control (a shell script written by the test):
// `-d` makes its control pipe appear, `quit` on its input removes it; every call is written down.
#include "server/mps_control.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "common/temp_dir_for_tests.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

constexpr char kStandIn[] = R"(#!/bin/sh
calls="$CUDA_MPS_PIPE_DIRECTORY/../calls"
if [ "$1" = -d ]; then
  echo "start, log in $CUDA_MPS_LOG_DIRECTORY" >>"$calls"
  : >"$CUDA_MPS_PIPE_DIRECTORY/control"
  [ "${STAND_IN_EXIT:-0}" = 0 ] && : >"$CUDA_MPS_PIPE_DIRECTORY/daemon"
  exit "${STAND_IN_EXIT:-0}"
fi
read -r command
echo "$command" >>"$calls"
[ -f "$CUDA_MPS_PIPE_DIRECTORY/daemon" ] || exit 1  # nothing listens: the real one fails too
[ "$command" = quit ] && rm -f "$CUDA_MPS_PIPE_DIRECTORY/control" "$CUDA_MPS_PIPE_DIRECTORY/daemon"
exit 0
)";

class MpsControlTest : public testing::Test {
 protected:
  void SetUp() override {
    if (access("/tmp/nvidia-mps/control", F_OK) == 0) {
      GTEST_SKIP() << "this machine runs an MPS control daemon for everyone: traind uses it";
    }
    ASSERT_FALSE(dir_.path().empty());
    std::ofstream(dir_ / "control-stand-in") << kStandIn;
    ASSERT_EQ(chmod((dir_ / "control-stand-in").c_str(), 0700), 0);
    options_.program = dir_ / "control-stand-in";
    options_.directory = dir_ / "mps";
  }
  std::string Calls() const {
    std::ifstream file(dir_ / "calls");
    std::stringstream calls;
    calls << file.rdbuf();
    return calls.str();
  }
  bool Listening() const { return access((dir_ / "mps/control").c_str(), F_OK) == 0; }

  TempDirForTests dir_;
  MpsControl::Options options_;
};

TEST_F(MpsControlTest, StartsOnTheFirstPackedTrialAndQuitsWithTraind) {
  {
    MpsControl mps(options_);
    EXPECT_EQ(Calls(), "");  // nothing until a trial needs it
    const std::vector<std::string> expected = {
        "CUDA_MPS_PIPE_DIRECTORY=" + options_.directory,
        "CUDA_MPS_LOG_DIRECTORY=" + options_.directory + "/log"};
    EXPECT_EQ(mps.ClientEnvironment(), expected);
    EXPECT_EQ(mps.ClientEnvironment(), expected);  // started once
    EXPECT_TRUE(Listening());
    EXPECT_EQ(Calls(), "start, log in " + options_.directory + "/log\n");
    struct stat info;
    ASSERT_EQ(stat(options_.directory.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);  // its pipes are traind's alone
  }
  EXPECT_FALSE(Listening());
  EXPECT_EQ(Calls(), "start, log in " + options_.directory + "/log\nquit\n");
}

// A traind killed with SIGKILL left its daemon running: the next one tells it to quit first.
TEST_F(MpsControlTest, QuitsADaemonLeftBehindBeforeStartingItsOwn) {
  ASSERT_EQ(mkdir(options_.directory.c_str(), 0700), 0);
  std::ofstream(options_.directory + "/control") << "";
  std::ofstream(options_.directory + "/daemon") << "";
  MpsControl mps(options_);
  EXPECT_FALSE(mps.ClientEnvironment().empty());
  EXPECT_EQ(Calls(), "quit\nstart, log in " + options_.directory + "/log\n");
}

// A pipe no daemon listens on (the machine rebooted): removed at once, not waited for.
TEST_F(MpsControlTest, AStalePipeIsRemovedNotWaitedFor) {
  ASSERT_EQ(mkdir(options_.directory.c_str(), 0700), 0);
  std::ofstream(options_.directory + "/control") << "";
  MpsControl mps(options_);
  const absl::Time start = absl::Now();
  EXPECT_FALSE(mps.ClientEnvironment().empty());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // not the 10 s wait for a quitting daemon
  EXPECT_EQ(Calls(), "quit\nstart, log in " + options_.directory + "/log\n");
}

TEST_F(MpsControlTest, AControlProgramThatFailsLeavesTrialsTakingTurns) {
  setenv("STAND_IN_EXIT", "1", 1);
  MpsControl mps(options_);
  EXPECT_TRUE(mps.ClientEnvironment().empty());
  EXPECT_TRUE(mps.ClientEnvironment().empty());  // tried once
  unsetenv("STAND_IN_EXIT");
  mps.Stop();
  EXPECT_EQ(Calls(), "start, log in " + options_.directory + "/log\n");  // no quit: never ran
}

TEST_F(MpsControlTest, AMissingControlProgramLeavesTrialsTakingTurns) {
  options_.program = dir_ / "no-such-program";
  MpsControl mps(options_);
  EXPECT_TRUE(mps.ClientEnvironment().empty());
}

// A daemon traind's environment names already serves every worker: traind starts none.
TEST_F(MpsControlTest, UsesNoneOfItsOwnWhereOneAlreadyServesTheMachine) {
  ASSERT_EQ(mkdir((dir_ / "system").c_str(), 0700), 0);
  std::ofstream(dir_ / "system/control") << "";
  setenv("CUDA_MPS_PIPE_DIRECTORY", (dir_ / "system").c_str(), 1);
  MpsControl mps(options_);
  EXPECT_TRUE(mps.ClientEnvironment().empty());
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  EXPECT_EQ(Calls(), "");
}

TEST_F(MpsControlTest, StoppedBeforeAnyTrialStartsNothing) {
  MpsControl mps(options_);
  mps.Stop();
  EXPECT_TRUE(mps.ClientEnvironment().empty());
  EXPECT_EQ(Calls(), "");
}

}  // namespace
}  // namespace traind
