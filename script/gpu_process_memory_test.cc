#include "script/gpu_process_memory.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace traind {
namespace {

// A session of its own, as ProgramProcess starts a program: its leader and one worker it
// started, both waiting until killed. Killed with the whole session when this goes away.
class Session {
 public:
  Session() {
    int ready[2];
    if (pipe(ready) != 0) return;
    leader_ = fork();
    if (leader_ == 0) {
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
    if (read(ready[0], &worker_, sizeof(worker_)) != static_cast<ssize_t>(sizeof(worker_))) {
      worker_ = -1;
    }
    close(ready[0]);
  }
  ~Session() { End(); }
  void End() {
    if (leader_ <= 0) return;
    kill(-leader_, SIGKILL);
    waitpid(leader_, nullptr, 0);
    leader_ = -1;
  }
  pid_t leader() const { return leader_; }
  pid_t worker() const { return worker_; }

 private:
  pid_t leader_ = -1;
  pid_t worker_ = -1;
};

TEST(GpuProcessMemoryTest, AProcessStartedByASessionLeaderIsInItsSession) {
  Session session;
  const pid_t leader = session.leader();
  ASSERT_GT(leader, 0);
  ASSERT_GT(session.worker(), 0);
  EXPECT_EQ(SessionOf(leader), leader);
  EXPECT_EQ(SessionOf(session.worker()), leader);
  EXPECT_NE(SessionOf(getpid()), leader);
  session.End();
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
  Session session;
  ASSERT_GT(session.leader(), 0);
  EXPECT_EQ((*memory)->UsedBySession(session.leader()).bytes, 0);
  EXPECT_FALSE((*memory)->UsedBySession(session.leader()).device.has_value());
}

}  // namespace
}  // namespace traind
