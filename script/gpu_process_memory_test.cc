#include "script/gpu_process_memory.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(GpuProcessMemoryTest, AProcessStartedByASessionLeaderIsInItsSession) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setsid();
    const pid_t worker = fork();  // a worker of the program, still in its session
    if (worker == 0) {
      pause();
      _exit(0);
    }
    close(ready[0]);
    (void)!write(ready[1], &worker, sizeof(worker));
    pause();
    _exit(0);
  }
  close(ready[1]);
  pid_t worker = 0;
  ASSERT_EQ(read(ready[0], &worker, sizeof(worker)), static_cast<ssize_t>(sizeof(worker)));
  close(ready[0]);
  EXPECT_EQ(SessionOf(leader), leader);
  EXPECT_EQ(SessionOf(worker), leader);
  EXPECT_NE(SessionOf(getpid()), leader);
  kill(-leader, SIGKILL);
  waitpid(leader, nullptr, 0);
  EXPECT_EQ(SessionOf(leader), -1);  // gone (reaped)
}

TEST(GpuProcessMemoryTest, OpensWhereNvmlIsAndSaysWhyNotElsewhere) {
  absl::StatusOr<std::unique_ptr<GpuProcessMemory>> memory = GpuProcessMemory::Open();
  if (!memory.ok()) {
    EXPECT_EQ(memory.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(memory.status().message().find("NVML"), std::string::npos) << memory.status();
    return;
  }
  // A fresh session that uses no GPU (not this test's: ctest runs CUDA tests beside it there).
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setsid();
    close(ready[0]);
    close(ready[1]);  // the parent reads EOF: the session exists
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  (void)!read(ready[0], &byte, 1);
  close(ready[0]);
  EXPECT_EQ((*memory)->UsedBySession(leader), 0);
  kill(leader, SIGKILL);
  waitpid(leader, nullptr, 0);
}

}  // namespace
}  // namespace traind
