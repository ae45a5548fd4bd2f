#include "supervise/worker_forker.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/child_environment.h"
#include "common/errno_status.h"
#include "supervise/fork_protocol.h"
#include "supervise/fork_server.h"
#include "supervise/spawn_in_group.h"

namespace traind {

absl::StatusOr<std::unique_ptr<WorkerForker>> WorkerForker::Start(const std::string& program) {
#ifdef __linux__
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    return Errno("socketpair");
  }
  // Its parent-death check (StopWithParent) and its children's, whose parent is this process.
  const ChildEnvironment envp({absl::StrCat("TRAIND_PARENT_PID=", getpid())});
  pid_t pid = 0;
  const int rc =
      SpawnInOwnGroup({program, kForkServerFlag}, {sockets[1], -1, -1}, envp.envp(), &pid);
  close(sockets[1]);
  if (rc != 0) {
    close(sockets[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start the fork server ", program, ": ", std::strerror(rc)));
  }
  return std::unique_ptr<WorkerForker>(new WorkerForker(pid, sockets[0]));
#else
  (void)program;
  return absl::UnimplementedError("workers are forked on Linux only");
#endif
}

WorkerForker::~WorkerForker() {
  close(socket_);
  kill(pid_, SIGKILL);  // it holds nothing to save, and may still be loading
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

namespace {

// How long a server may take to load, or to answer one request, before it counts as failed (it
// loads in about a second and answers in milliseconds).
constexpr int kPatienceMs = 30'000;

// Whether `socket` has something to read within `timeout_ms` (-1: however long).
bool Readable(int socket, int timeout_ms) {
  pollfd pfd{socket, POLLIN, 0};
  int ready;
  do {
    ready = poll(&pfd, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  return ready > 0;
}

// A refusal that says nothing of the server's health: this one request failed.
bool Passing(int minus_errno) { return minus_errno == -EAGAIN || minus_errno == -ENOMEM; }

}  // namespace

bool WorkerForker::AwaitReady(bool block) {
  if (state_ != State::kLoading) return state_ == State::kReady;
  if (!Readable(socket_, block ? kPatienceMs : 0)) {
    if (block) state_ = State::kFailed;  // loading that long: something is wrong with it
    return false;
  }
  absl::StatusOr<int> answer = ReceiveForkAnswer(socket_);
  state_ = answer.ok() && *answer == 0 ? State::kReady : State::kFailed;
  return state_ == State::kReady;
}

WorkerForker::State WorkerForker::Poll() {
  const State state = state_;
  if (state != State::kLoading) return state;
  if (!mu_.TryLock()) return State::kLoading;  // a Fork waits for it to load
  AwaitReady(/*block=*/false);
  mu_.Unlock();
  return state_;
}

absl::StatusOr<pid_t> WorkerForker::Fork(char* const* envp, const std::array<int, 3>& fds) {
  absl::MutexLock lock(&mu_);
  if (!AwaitReady(/*block=*/true)) {
    return absl::UnavailableError("the fork server did not start (its stderr says why)");
  }
  if (absl::Status sent = SendForkRequest(socket_, envp, fds); !sent.ok()) {
    // Too large a request says nothing of the server; anything else, that it is gone.
    if (!absl::IsInvalidArgument(sent) && !absl::IsResourceExhausted(sent)) {
      state_ = State::kFailed;
    }
    return sent;
  }
  if (!Readable(socket_, kPatienceMs)) {
    state_ = State::kFailed;
    return absl::UnavailableError(
        absl::StrCat("the fork server did not answer in ", kPatienceMs / 1000, " s"));
  }
  absl::StatusOr<int> answer = ReceiveForkAnswer(socket_);
  if (!answer.ok()) {
    state_ = State::kFailed;
    return answer.status();
  }
  if (*answer > 0) return static_cast<pid_t>(*answer);
  if (*answer == 0 || !Passing(*answer)) state_ = State::kFailed;
  return absl::FailedPreconditionError(
      absl::StrCat("the fork server cannot fork: ",
                   *answer == 0 ? "it answered no pid" : std::strerror(-*answer)));
}

}  // namespace traind
