#include "client/process_ended.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace traind {
namespace {

// Running: not ended; exited but not reaped (a zombie): ended; reaped: ended.
TEST(ProcessEndedTest, AZombieHasEnded) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // waits until the parent has looked at it running, then exits
    char byte;
    close(ready[1]);
    (void)!read(ready[0], &byte, 1);
    _exit(0);
  }
  close(ready[0]);
  EXPECT_FALSE(ProcessEnded(child));
  close(ready[1]);  // the child reads EOF and exits; not reaped yet
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {
    ended = ProcessEnded(child);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ended) << "a zombie child was not seen as ended";
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(ProcessEnded(child));
}

}  // namespace
}  // namespace traind
