#include "script/gpu_process_memory.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(GpuProcessMemoryTest, ASessionIsItsLeaderAndTheProcessesItStarted) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setsid();
    if (fork() == 0) {  // a worker of the program, still in its session
      close(ready[0]);
      (void)!write(ready[1], "x", 1);
      pause();
      _exit(0);
    }
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);  // the worker exists
  close(ready[0]);
  // The leader's setsid() came before its fork, so the session is complete now.
  const std::set<pid_t> session = ProcessesOfSession(leader);
  kill(-leader, SIGKILL);
  waitpid(leader, nullptr, 0);
  EXPECT_EQ(session.size(), 2u);
  EXPECT_EQ(session.count(leader), 1u);
  EXPECT_EQ(session.count(getpid()), 0u);
}

TEST(GpuProcessMemoryTest, OpensWhereNvmlIsAndSaysWhyNotElsewhere) {
  absl::StatusOr<std::unique_ptr<GpuProcessMemory>> memory = GpuProcessMemory::Open();
  if (!memory.ok()) {
    EXPECT_EQ(memory.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(memory.status().message().find("NVML"), std::string::npos) << memory.status();
    return;
  }
  // This test process uses no GPU.
  EXPECT_EQ((*memory)->UsedBy({getpid()}), 0);
}

}  // namespace
}  // namespace traind
