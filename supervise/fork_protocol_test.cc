#include "supervise/fork_protocol.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

// A connected socket pair, as traind and its fork server hold one.
struct SocketPair {
  int ends[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends), 0); }
  ~SocketPair() {
    for (int end : ends) {
      if (end >= 0) close(end);
    }
  }
};

// A pipe whose write end is sent; reading its read end tells whether any copy of the write end
// is still open anywhere in this process (EOF: none).
struct Pipe {
  int ends[2] = {-1, -1};
  Pipe() { EXPECT_EQ(pipe2(ends, O_CLOEXEC), 0); }
  ~Pipe() {
    for (int end : ends) {
      if (end >= 0) close(end);
    }
  }
  void CloseWriteEnd() {
    close(ends[1]);
    ends[1] = -1;
  }
  bool AtEof() const {
    fcntl(ends[0], F_SETFL, O_NONBLOCK);
    char byte;
    return read(ends[0], &byte, 1) == 0;
  }
};

std::vector<char*> Envp(std::vector<std::string>& entries) {
  std::vector<char*> envp;
  for (std::string& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  return envp;
}

TEST(ForkProtocolTest, ARequestCarriesTheEnvironmentAndThreeDescriptors) {
  SocketPair sockets;
  Pipe in, out, err;
  std::vector<std::string> environment = {"A=1", "EMPTY=", "PATH=/bin:/usr/bin"};
  ASSERT_TRUE(SendForkRequest(sockets.ends[0], Envp(environment).data(),
                              {in.ends[0], out.ends[1], err.ends[1]})
                  .ok());
  absl::StatusOr<ForkRequest> request = ReceiveForkRequest(sockets.ends[1]);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->environment, environment);
  // The received copies work: a byte written through the received stdout reaches the pipe.
  ASSERT_EQ(write(request->fds[1], "x", 1), 1);
  char byte = 0;
  ASSERT_EQ(read(out.ends[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
  for (int fd : request->fds) {
    EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);  // the server's copies do not leak into exec
    close(fd);
  }
}

// A request without its three descriptors is refused, and the ones it carried are closed: a
// pipe's write end left open in the server would keep the worker's reader from ever seeing EOF.
TEST(ForkProtocolTest, ARequestWithTooFewDescriptorsIsRefusedAndClosesThem) {
  SocketPair sockets;
  // A raw message: traind's SendForkRequest always sends three.
  Pipe another;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  char payload[] = "A=1";
  iovec data{payload, sizeof payload};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* carried = CMSG_FIRSTHDR(&message);
  carried->cmsg_level = SOL_SOCKET;
  carried->cmsg_type = SCM_RIGHTS;
  carried->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(carried), &another.ends[1], sizeof(int));
  ASSERT_GT(sendmsg(sockets.ends[0], &message, 0), 0);
  another.CloseWriteEnd();
  absl::StatusOr<ForkRequest> refused = ReceiveForkRequest(sockets.ends[1]);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("must carry 3 descriptors"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(another.AtEof());
}

TEST(ForkProtocolTest, AnEnvironmentOverTheLimitIsRefusedBeforeSending) {
  SocketPair sockets;
  Pipe pipe;
  std::vector<std::string> environment = {"BIG=" + std::string(kMaxForkRequestBytes, 'x')};
  absl::Status sent = SendForkRequest(sockets.ends[0], Envp(environment).data(),
                                      {pipe.ends[0], pipe.ends[1], pipe.ends[1]});
  EXPECT_EQ(sent.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ForkProtocolTest, AClosedSocketEndsRequestsAndAnswers) {
  SocketPair sockets;
  ASSERT_TRUE(SendForkAnswer(sockets.ends[1], 4242).ok());
  absl::StatusOr<int> answer = ReceiveForkAnswer(sockets.ends[0]);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(*answer, 4242);
  close(sockets.ends[0]);
  sockets.ends[0] = -1;
  EXPECT_TRUE(absl::IsNotFound(ReceiveForkRequest(sockets.ends[1]).status()));

  SocketPair others;
  close(others.ends[1]);
  others.ends[1] = -1;
  EXPECT_TRUE(absl::IsUnavailable(ReceiveForkAnswer(others.ends[0]).status()));
}

}  // namespace
}  // namespace traind
