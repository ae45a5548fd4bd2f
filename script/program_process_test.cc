// ProgramProcess's limits (traind --script-memory-limit, --script-file-size-limit): real programs
// read what the kernel says their limits are (/proc/self/limits), and one allocates past its own.
// And its reads: one read takes all a pipe holds.
#include "script/program_process.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace traind {
namespace {

struct Ran {
  std::string out;
  std::string err;
  ProgramProcess::Exit exit;
};

Ran RunToEnd(ProgramProcess::Options options) {
  options.working_dir = "/";
  options.environment = {"PATH=/usr/bin:/bin"};
  absl::StatusOr<std::unique_ptr<ProgramProcess>> program = ProgramProcess::Start(options);
  EXPECT_TRUE(program.ok()) << program.status();
  Ran ran;
  if (!program.ok()) return ran;
  std::vector<ProgramProcess::Output> output;
  while ((*program)->Read(absl::InfiniteDuration(), &output)) {
    for (const ProgramProcess::Output& piece : output) {
      (piece.stream == ProgramProcess::Stream::kStdout ? ran.out : ran.err) += piece.bytes;
    }
    output.clear();
  }
  ran.exit = (*program)->Wait();
  return ran;
}

// "SOFT HARD" from the line of /proc/self/limits for `name` ("Max data size"): "1048576 1048576",
// "unlimited unlimited".
std::string LimitLine(const std::string& limits, const std::string& name) {
  const size_t at = limits.find(name);
  if (at == std::string::npos) return "";
  const std::string line =
      limits.substr(at + name.size(), limits.find('\n', at) - at - name.size());
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() < 2) return "";
  return words[0] + " " + words[1];
}

ProgramProcess::Options ShowLimits() {
  ProgramProcess::Options options;
  options.path = "/bin/sh";
  // The limits of a child the program starts, then the program's own (exec: cat becomes the
  // program's process).
  options.argv = {"sh", "-c",
                  "sh -c 'cat /proc/self/limits'; echo PROGRAM; exec cat /proc/self/limits"};
  return options;
}

TEST(ProgramProcessTest, LimitsBindTheProgramAndEveryProcessItStarts) {
  ProgramProcess::Options options = ShowLimits();
  options.memory_bytes = int64_t{96} << 20;
  options.file_size_bytes = int64_t{1} << 20;
  const Ran ran = RunToEnd(options);
  ASSERT_EQ(ran.exit.exit_code, 0) << ran.err;
  const size_t program = ran.out.find("PROGRAM");
  ASSERT_NE(program, std::string::npos) << ran.out;
  for (const std::string& limits : {ran.out.substr(0, program), ran.out.substr(program)}) {
    // Soft and hard alike: the program cannot raise them again.
    EXPECT_EQ(LimitLine(limits, "Max data size"), "100663296 100663296") << limits;
    EXPECT_EQ(LimitLine(limits, "Max file size"), "1048576 1048576") << limits;
    EXPECT_EQ(LimitLine(limits, "Max core file size"), "0 0") << limits;
  }
}

TEST(ProgramProcessTest, WithoutLimitsTheProgramKeepsTraindsOwnButNeverDumpsCore) {
  const Ran ran = RunToEnd(ShowLimits());
  ASSERT_EQ(ran.exit.exit_code, 0) << ran.err;
  const std::string own_limits = ran.out.substr(ran.out.find("PROGRAM"));
  // What this test runs under, which the program inherits.
  std::ifstream file("/proc/self/limits");
  const std::string own((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_NE(LimitLine(own, "Max data size"), "");
  EXPECT_EQ(LimitLine(own_limits, "Max data size"), LimitLine(own, "Max data size")) << ran.out;
  EXPECT_EQ(LimitLine(own_limits, "Max file size"), LimitLine(own, "Max file size")) << ran.out;
  EXPECT_EQ(LimitLine(own_limits, "Max core file size"), "0 0") << ran.out;
}

TEST(ProgramProcessTest, AProgramPastItsMemoryLimitGetsMemoryError) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  ProgramProcess::Options options;
  options.path = "/usr/bin/python3";
  options.argv = {"python3", "-c", "b = bytearray(256 << 20); print('allocated')"};
  options.memory_bytes = int64_t{64} << 20;
  const Ran ran = RunToEnd(options);
  EXPECT_EQ(ran.exit.exit_code, 1) << ran.out << ran.err;
  EXPECT_TRUE(absl::StrContains(ran.err, "MemoryError")) << ran.err;
  EXPECT_FALSE(absl::StrContains(ran.out, "allocated"));
  // The same program under no limit allocates (the limit, not the machine, refused it).
  options.memory_bytes = 0;
  EXPECT_TRUE(absl::StrContains(RunToEnd(options).out, "allocated"));
}

TEST(ProgramProcessTest, AWritePastTheFileSizeLimitFailsWithFileTooLarge) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  char made[] = "/tmp/program_process_test.XXXXXX";
  ASSERT_NE(mkdtemp(made), nullptr);
  const std::string dir = made;
  struct RemovedAtEnd {
    std::string dir;
    ~RemovedAtEnd() { std::filesystem::remove_all(dir); }
  } removed{dir};
  ProgramProcess::Options options;
  options.path = "/usr/bin/python3";
  options.argv = {"python3", "-c",
                  "open('" + dir + "/big', 'wb').write(bytes(2 << 20)); print('wrote')"};
  options.file_size_bytes = int64_t{1} << 20;
  const Ran ran = RunToEnd(options);
  EXPECT_EQ(ran.exit.exit_code, 1) << ran.out << ran.err;
  EXPECT_TRUE(absl::StrContains(ran.err, "File too large")) << ran.err;
  EXPECT_FALSE(absl::StrContains(ran.out, "wrote"));
}

// In a child process, whose limits the test may lower for good: a limit above the hard one this
// process runs under is lowered to it, one below is kept, none (0) stays none.
TEST(ProgramProcessTest, ALimitAboveTraindsOwnHardLimitIsLoweredToIt) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit hard{1 << 20, 1 << 20};
    const bool ok = setrlimit(RLIMIT_FSIZE, &hard) == 0 &&
                    AttainableLimit(RLIMIT_FSIZE, int64_t{2} << 20) == int64_t{1} << 20 &&
                    AttainableLimit(RLIMIT_FSIZE, 4096) == 4096 &&
                    AttainableLimit(RLIMIT_FSIZE, 0) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A program that writes more than the 64 KiB the runner once read at a time, then ends: the pipe
// holds all of it (the program has exited, so nothing more comes), and one Read returns all of it.
// A runner that took 64 KiB per pause capped a fast printer at 6.4 MB/s.
TEST(ProgramProcessTest, OneReadTakesAllThePipeHolds) {
  ProgramProcess::Options options;
  options.path = "/bin/sh";
  options.argv = {"sh", "-c", "head -c 600000 /dev/zero"};
  options.working_dir = "/";
  options.environment = {"PATH=/usr/bin:/bin"};
  absl::StatusOr<std::unique_ptr<ProgramProcess>> program = ProgramProcess::Start(options);
  ASSERT_TRUE(program.ok()) << program.status();
  if ((*program)->pipe_capacity(ProgramProcess::Stream::kStdout) < 600000) {
    GTEST_SKIP() << "this system's pipe-max-size keeps pipes at "
                 << (*program)->pipe_capacity(ProgramProcess::Stream::kStdout) << " bytes";
  }
  while (!(*program)->HasExited()) usleep(1000);  // waits for a state: the program's end
  std::vector<ProgramProcess::Output> output;
  ASSERT_TRUE((*program)->Read(absl::InfiniteDuration(), &output));
  ASSERT_EQ(output.size(), 1u);
  EXPECT_EQ(output[0].stream, ProgramProcess::Stream::kStdout);
  EXPECT_EQ(output[0].bytes.size(), 600000u);
  EXPECT_TRUE(output[0].pipe_nearly_full);  // 600,000 of a 1 MiB pipe
  (*program)->Wait();
}

}  // namespace
}  // namespace traind
