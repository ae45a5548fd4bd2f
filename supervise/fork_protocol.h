// What traind (supervise/worker_forker.h) and traind-worker's fork server (supervise/fork_server.h)
// say to each other over their SOCK_SEQPACKET socket pair, one message each way per fork:
//   request: the child's whole environment ("NAME=value", each ended by a NUL), carrying its
//            stdin, stdout and stderr (SCM_RIGHTS);
//   answer:  the child's pid, or -errno when it could not be forked.
// The server's first message, before any request, is the answer 0: it has loaded and waits.
#ifndef TRAIND_SUPERVISE_FORK_PROTOCOL_H_
#define TRAIND_SUPERVISE_FORK_PROTOCOL_H_

#include <sys/types.h>

#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace traind {

// traind's environments are a few KiB; a request beyond this is refused, not truncated. Below a
// unix socket's default send buffer (about 208 KiB), which bounds one SOCK_SEQPACKET message.
inline constexpr size_t kMaxForkRequestBytes = 128 << 10;

struct ForkRequest {
  std::vector<std::string> environment;
  std::array<int, 3> fds{-1, -1, -1};  // stdin, stdout, stderr: the receiver closes them
};

// `envp`: null-terminated, as execve takes it.
absl::Status SendForkRequest(int socket, char* const* envp, const std::array<int, 3>& fds);
// NOT_FOUND: the other end closed the socket (no more requests).
absl::StatusOr<ForkRequest> ReceiveForkRequest(int socket);

absl::Status SendForkAnswer(int socket, int pid_or_minus_errno);
// The answer as sent (a pid, 0 for "ready", or -errno); UNAVAILABLE: the server is gone.
absl::StatusOr<int> ReceiveForkAnswer(int socket);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_FORK_PROTOCOL_H_
