#include "script/sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/on_path.h"
#include "common/run_command.h"
#include "common/temp_dir_for_tests.h"
#include "script/program_process.h"

namespace traind {
namespace {

// Where `words` (consecutive) first appear in `args`; -1 when they do not.
int IndexOf(const std::vector<std::string>& args, const std::vector<std::string>& words) {
  for (size_t i = 0; i + words.size() <= args.size(); ++i) {
    if (std::equal(words.begin(), words.end(), args.begin() + i)) return static_cast<int>(i);
  }
  return -1;
}

class SandboxCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path();
    std::filesystem::create_directories(root_ + "/state/jobs/7/work");
    std::filesystem::create_directories(root_ + "/state/data");
    std::filesystem::create_directories(root_ + "/data");
    std::ofstream(root_ + "/tokens") << "secret\n";
    sandbox_.set_bwrap_path("/usr/bin/bwrap");
    view_.writable = {root_ + "/state/jobs/7/work"};
    view_.working_dir = root_ + "/state/jobs/7/work";
    view_.home = "/home/someone";
  }
  TempDirForTests dir_;
  std::string root_;
  trainer::v1::ProgramSandbox sandbox_;
  SandboxView view_;
};

TEST_F(SandboxCommandTest, StartsWithBubblewrapAndEndsBeforeTheProgram) {
  const std::vector<std::string> args = SandboxCommand(sandbox_, view_);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args.front(), "/usr/bin/bwrap");
  EXPECT_EQ(args.back(), "--");
  EXPECT_GE(IndexOf(args, {"--unshare-pid"}), 0);
  EXPECT_GE(IndexOf(args, {"--cap-drop", "ALL"}), 0);
  EXPECT_GE(IndexOf(args, {"--die-with-parent"}), 0);
  EXPECT_GE(IndexOf(args, {"--chdir", view_.working_dir}), 0);
  EXPECT_GE(IndexOf(args, {"--tmpfs", "/home/someone"}), 0);
  EXPECT_GE(IndexOf(args, {"--proc", "/proc"}), 0);
  EXPECT_GE(IndexOf(args, {"--tmpfs", "/dev/shm"}), 0);
}

TEST_F(SandboxCommandTest, HidesTraindsFilesInsideWhatIsSeenThenBindsTheJobsFolders) {
  // The data root is the whole temp folder, which holds traind's state and its token file.
  sandbox_.add_read_only(root_);
  sandbox_.add_hidden(root_ + "/state");
  sandbox_.add_hidden(root_ + "/tokens");
  const std::vector<std::string> args = SandboxCommand(sandbox_, view_);
  const int data = IndexOf(args, {"--ro-bind-try", root_, root_});
  const int state = IndexOf(args, {"--tmpfs", root_ + "/state"});
  const int tokens = IndexOf(args, {"--ro-bind", "/dev/null", root_ + "/tokens"});
  const int work = IndexOf(args, {"--bind", view_.writable[0], view_.writable[0]});
  ASSERT_GE(data, 0);
  EXPECT_GT(state, data);
  EXPECT_GT(tokens, data);
  EXPECT_GT(work, state);  // the job's own folder shows through the hidden state directory
}

TEST_F(SandboxCommandTest, AReadOnlyFolderInsideAHiddenOneIsShownAfterTheHiding) {
  sandbox_.add_read_only(root_);
  sandbox_.add_read_only(root_ + "/state/data");
  sandbox_.add_hidden(root_ + "/state");
  const std::vector<std::string> args = SandboxCommand(sandbox_, view_);
  const int state = IndexOf(args, {"--tmpfs", root_ + "/state"});
  const int data = IndexOf(args, {"--ro-bind-try", root_ + "/state/data", root_ + "/state/data"});
  ASSERT_GE(state, 0);
  EXPECT_GT(data, state);
}

TEST_F(SandboxCommandTest, WhatTheProgramCannotSeeAnywayIsNotMounted) {
  sandbox_.add_hidden(root_ + "/state");  // under /tmp, the sandbox's own
  const std::vector<std::string> args = SandboxCommand(sandbox_, view_);
  EXPECT_EQ(IndexOf(args, {"--tmpfs", root_ + "/state"}), -1);
}

TEST_F(SandboxCommandTest, ASeveralProcessJobSharesTheMachinesDevShm) {
  view_.share_dev_shm = true;
  const std::vector<std::string> args = SandboxCommand(sandbox_, view_);
  EXPECT_GE(IndexOf(args, {"--bind", "/dev/shm", "/dev/shm"}), 0);
  EXPECT_EQ(IndexOf(args, {"--tmpfs", "/dev/shm"}), -1);
}

TEST(InterpreterTreesTest, AVenvIsSeenWholeAndTheSystemsInterpreterNeedsNothing) {
  EXPECT_TRUE(InterpreterTrees("/usr/bin/python3").empty());
  TempDirForTests dir;
  std::filesystem::create_directories(dir.path() + "/venv/bin");
  std::filesystem::create_symlink("/usr/bin/python3", dir.path() + "/venv/bin/python");
  EXPECT_EQ(InterpreterTrees(dir.path() + "/venv/bin/python"),
            std::vector<std::string>{dir.path() + "/venv"});
}

// A real bubblewrap, where this machine lets one make a sandbox (else the tests say why they skip).
class RealSandboxTest : public SandboxCommandTest {
 protected:
  void SetUp() override {
    SandboxCommandTest::SetUp();
    const std::string bwrap = FindOnPath("bwrap");
    if (bwrap.empty()) GTEST_SKIP() << "bubblewrap is not installed (apt-get install bubblewrap)";
    absl::StatusOr<CommandResult> probe = RunCommand({bwrap, "--unshare-pid", "--ro-bind", "/", "/",
                                                      "--proc", "/proc", "--dev", "/dev", "true"});
    if (!probe.ok() || probe->exit_code != 0) {
      GTEST_SKIP() << "bubblewrap cannot make a sandbox here: "
                   << (probe.ok() ? probe->err : probe.status().ToString());
    }
    sandbox_.set_bwrap_path(bwrap);
    sandbox_.add_read_only(root_);  // as a data root that holds traind's state would be
    sandbox_.add_hidden(root_ + "/state");
    sandbox_.add_hidden(root_ + "/tokens");
    view_.home = "";
  }

  // Runs `script` with sh in the sandbox: its output and how it ended.
  std::pair<std::string, ProgramProcess::Exit> Run(const std::string& script) {
    ProgramProcess::Options options;
    options.path = "/bin/sh";
    options.argv = {"sh", "-c", script};
    options.environment = {"PATH=/usr/bin:/bin"};
    options.working_dir = view_.working_dir;
    options.wrapper = SandboxCommand(sandbox_, view_);
    absl::StatusOr<std::unique_ptr<ProgramProcess>> program = ProgramProcess::Start(options);
    EXPECT_TRUE(program.ok()) << program.status();
    if (!program.ok()) return {};
    std::string out;
    std::vector<ProgramProcess::Output> output;
    while ((*program)->Read(absl::InfiniteDuration(), &output)) {
      for (const ProgramProcess::Output& piece : output) out += piece.bytes;
      output.clear();
    }
    return {out, (*program)->Wait()};
  }
};

TEST_F(RealSandboxTest, TraindsFilesAreUnreadableAndTheJobsFolderIsWritable) {
  std::ofstream(root_ + "/state/traind.db") << "the store";
  std::filesystem::create_directories(root_ + "/state/jobs/8/work");
  std::ofstream(root_ + "/state/jobs/8/work/theirs.txt") << "another job's";
  std::ofstream(root_ + "/data/train.csv") << "x,y\n";
  const auto [out, exit] = Run(
      "cat " + root_ + "/tokens 2>/dev/null || echo denied; ls " + root_ + "/state; ls " + root_ +
      "/state/jobs; " + "cat " + root_ + "/data/train.csv; echo made > mine.txt && cat mine.txt; " +
      "(echo x > " + root_ + "/data/new.txt) 2>/dev/null || echo read-only");
  EXPECT_EQ(exit.exit_code, 0) << out;
  EXPECT_EQ(out, "denied\njobs\n7\nx,y\nmade\nread-only\n");  // no store, no job 8
  EXPECT_TRUE(std::filesystem::exists(root_ + "/state/jobs/7/work/mine.txt"));
}

TEST_F(RealSandboxTest, ItSeesOnlyItsOwnProcesses) {
  const auto [out, exit] = Run("ls /proc | grep -c '^[0-9]'");
  EXPECT_EQ(exit.exit_code, 0);
  // bubblewrap's init, sh, ls and grep: nothing of traind's or the machine's.
  EXPECT_LE(std::stoi(out), 4) << out;
}

TEST_F(RealSandboxTest, AProgramKilledByASignalIsReportedSo) {
  const auto [out, exit] = Run("kill -9 $$");
  EXPECT_EQ(exit.signal, 9) << exit.Describe();
}

TEST_F(RealSandboxTest, WhatLeftTheProgramsGroupDiesWithIt) {
  const std::string pid_file = root_ + "/state/jobs/7/work/escaped.pid";
  const auto [out, exit] =
      Run("setsid sh -c 'echo $$ > escaped.pid; sleep 600' & "
          "while [ ! -s escaped.pid ]; do sleep 0.01; done");
  EXPECT_EQ(exit.exit_code, 0);
  // Its pid is the sandbox's: find the escaped sleeper on the machine by its command line.
  absl::StatusOr<CommandResult> left = RunCommand({"pgrep", "-f", "^sleep 600$"});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->out, "") << "a process that left the program's group outlived the sandbox";
}

}  // namespace
}  // namespace traind
