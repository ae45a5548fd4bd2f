#include "client/process_ended.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
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

TEST(ProcessEndedTest, TheListenerOfASocketIsNamedAsThisNamespaceNumbersIt) {
  const std::string path = "/tmp/process_ended_test." + std::to_string(getpid()) + ".sock";
  EXPECT_EQ(ListenerPid(path), 0);  // nobody there
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
#ifdef SO_PEERCRED
  EXPECT_EQ(ListenerPid(path), getpid());
#endif
  close(fd);
  unlink(path.c_str());
}

}  // namespace
}  // namespace traind
