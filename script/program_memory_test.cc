// ProgramMemory on the CPU: a real program (a forked child leading its own session, as
// ProgramProcess starts one) burns CPU; its steps carry the share of the cores it kept busy and the
// host's memory, as a built-in CPU job's do.
#include "script/program_memory.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/proc_file.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

class BusyProgram {
 public:
  BusyProgram() {
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      volatile uint64_t spin = 0;
      while (true) ++spin;  // killed by the test
    }
  }
  ~BusyProgram() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(ProgramMemoryTest, ACpuProgramsStepsCarryTheCoresItKeptBusyAndTheHostsMemory) {
  BusyProgram program;
  ASSERT_GT(program.pid(), 0);
  // Its session is its own once setsid ran, and it burns CPU: wait for a tenth of a second of it.
  for (int tries = 0; tries < 10000 && SessionCpuSeconds(program.pid()) < 0.1; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(SessionCpuSeconds(program.pid()), 0.1);

  ProgramMemory memory;
  const absl::Time start = absl::Now();
  memory.WatchCpu(start, /*cores=*/4);
  memory.Sample(program.pid(), start + absl::Seconds(1));
  trainer::v1::StepMetrics first;
  memory.Fill(&first);
  ASSERT_TRUE(first.has_device_busy());
  // Its CPU seconds over 1 s of 4 cores' time: one spinning thread fills at most a quarter.
  EXPECT_GT(first.device_busy(), 0.0);
  EXPECT_LE(first.device_busy(), 1.0);
  EXPECT_FALSE(first.has_device_busy_training());  // the training starts here
  EXPECT_GT(first.device_total_bytes(), 0);
  EXPECT_GT(first.device_used_bytes(), 0);
  EXPECT_LE(first.device_used_bytes(), first.device_total_bytes());

  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  memory.Sample(program.pid(), start + absl::Seconds(3));
  trainer::v1::StepMetrics second;
  memory.Fill(&second);
  EXPECT_TRUE(second.has_device_busy_training());
}

TEST(ProgramMemoryTest, NotWatchedACpuProgramsStepsCarryNoShare) {
  BusyProgram program;
  ProgramMemory memory;
  memory.Sample(program.pid(), absl::Now());
  trainer::v1::StepMetrics step;
  memory.Fill(&step);
  EXPECT_FALSE(step.has_device_busy());
  EXPECT_EQ(step.device_total_bytes(), 0);
}

}  // namespace
}  // namespace traind
