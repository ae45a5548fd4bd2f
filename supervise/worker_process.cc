#include "supervise/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/child_environment.h"
#include "common/errno_status.h"
#include "common/status_macros.h"
#include "common/write_all.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "supervise/spawn_in_group.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_forker.h"

namespace traind {

namespace {

constexpr size_t kStderrLinesKept = 20;

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Start(
    const std::string& worker_path, const trainer::v1::WorkerRequest& request,
    const std::vector<std::string>& environment) {
  return WithRequest(Spawn(worker_path, environment), request);
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::WithRequest(
    absl::StatusOr<std::unique_ptr<WorkerProcess>> started,
    const trainer::v1::WorkerRequest& request) {
  ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker, std::move(started));
  if (absl::Status sent = worker->Send(request); !sent.ok()) {
    worker->Kill();
    return absl::InternalError(absl::StrCat(sent.message(), ": ", worker->Wait().Describe()));
  }
  return worker;
}

namespace {

// The three pipes a worker talks through: each end the child keeps is dup'ed onto its stdin,
// stdout or stderr (so loses O_CLOEXEC); this process keeps the other ends.
struct WorkerPipes {
  int request[2] = {-1, -1};
  int events[2] = {-1, -1};
  int diagnostics[2] = {-1, -1};

  absl::Status Open() {
    for (int* pipe : {request, events, diagnostics}) {
      if (pipe2(pipe, O_CLOEXEC) != 0) {
        absl::Status error = Errno("pipe");
        CloseAll();
        return error;
      }
    }
    return absl::OkStatus();
  }
  std::array<int, 3> ChildEnds() const { return {request[0], events[1], diagnostics[1]}; }
  void CloseChildEnds() {
    for (int* fd : {&request[0], &events[1], &diagnostics[1]}) CloseOne(fd);
  }
  void CloseAll() {
    CloseChildEnds();
    for (int* fd : {&request[1], &events[0], &diagnostics[0]}) CloseOne(fd);
  }
  static void CloseOne(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
};

// traind's environment, with `environment`'s variables replacing any of the same name, and this
// process's pid for the worker's StopWithParent (worker_side.h) unless `environment` names
// another.
std::vector<std::string> WithParentPid(std::vector<std::string> environment) {
  if (std::none_of(environment.begin(), environment.end(), [](const std::string& extra) {
        return extra.rfind("TRAIND_PARENT_PID=", 0) == 0;
      })) {
    environment.push_back(absl::StrCat("TRAIND_PARENT_PID=", getpid()));
  }
  return environment;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Spawn(
    const std::string& worker_path, const std::vector<std::string>& environment) {
  WorkerPipes pipes;
  RETURN_IF_ERROR(pipes.Open());
  const ChildEnvironment envp(WithParentPid(environment));
  pid_t pid = 0;
  const int rc = SpawnInOwnGroup({worker_path}, pipes.ChildEnds(), envp.envp(), &pid);
  pipes.CloseChildEnds();
  if (rc != 0) {
    pipes.CloseAll();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start worker ", worker_path, ": ", std::strerror(rc)));
  }
  return std::unique_ptr<WorkerProcess>(
      new WorkerProcess(pid, pipes.request[1], pipes.events[0], pipes.diagnostics[0]));
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> WorkerProcess::Fork(
    WorkerForker& forker, const std::vector<std::string>& environment) {
  WorkerPipes pipes;
  RETURN_IF_ERROR(pipes.Open());
  const ChildEnvironment envp(WithParentPid(environment));
  absl::StatusOr<pid_t> pid = forker.Fork(envp.envp(), pipes.ChildEnds());
  pipes.CloseChildEnds();
  if (!pid.ok()) {
    pipes.CloseAll();
    return pid.status();
  }
  std::unique_ptr<WorkerProcess> worker(
      new WorkerProcess(*pid, pipes.request[1], pipes.events[0], pipes.diagnostics[0]));
  worker->forked_ = true;
  return worker;
}

absl::Status WorkerProcess::Send(const trainer::v1::WorkerRequest& request) {
  if (phase_ == Phase::kBusy || request_fd_ < 0) {
    return absl::FailedPreconditionError("the worker already has its request");
  }
  // The request is small (the pipe holds it); a worker that dies after reading it shows up as an
  // early EOF on its events.
  std::string framed;
  {
    google::protobuf::io::StringOutputStream stream(&framed);
    google::protobuf::util::SerializeDelimitedToZeroCopyStream(request, &stream);
  }
  signal(SIGPIPE, SIG_IGN);
  const bool written = WriteAll(request_fd_, framed);
  const absl::Status sent =
      written ? absl::OkStatus() : Errno("cannot send the worker its request");
  if (written &&
      phase_ == Phase::kIdle) {  // a served worker: the last job's lines are not this one's
    absl::MutexLock lock(&mu_);
    stderr_lines_.clear();
  }
  phase_ = Phase::kBusy;
  serves_another_ = request.serve_another();
  if (!serves_another_) {  // no other request will follow
    close(request_fd_);
    request_fd_ = -1;
  }
  return sent;
}

WorkerProcess::ReadResult WorkerProcess::ReadEvent(trainer::v1::JobEvent* event,
                                                   absl::Duration timeout) {
  const ReadResult read = Read(event, timeout);
  if (read != ReadResult::kEvent || !event->has_worker_idle()) return read;
  if (!serves_another_) {
    {
      absl::MutexLock lock(&mu_);
      stderr_lines_.push_back("traind: the worker said it was idle, asked to run one job only");
    }
    Kill();  // as any garbage: it cannot be trusted to finish
    return ReadResult::kEnd;
  }
  phase_ = Phase::kIdle;
  jobs_served_ = event->worker_idle().jobs_served();
  return ReadResult::kEnd;
}

bool WorkerProcess::signalled() const {
  absl::MutexLock lock(&reap_mu_);
  return signalled_;
}

bool WorkerProcess::Reaped() const {
  absl::MutexLock lock(&reap_mu_);
  return reaped_;
}

bool WorkerProcess::HasExited() const {
  if (Reaped()) return true;
  siginfo_t info{};
  // WNOWAIT: look, leaving the exit status for Wait.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
  return info.si_pid == pid_;
}

WorkerProcess::WorkerProcess(pid_t pid, int request_fd, int events_fd, int stderr_fd)
    : pid_(pid), request_fd_(request_fd), events_fd_(events_fd) {
  stderr_thread_ = std::thread([this, stderr_fd] { DrainStderr(stderr_fd); });
}

WorkerProcess::~WorkerProcess() {
  if (!Reaped()) {
    Kill();
    Reap();
  }
  if (request_fd_ >= 0) close(request_fd_);
  close(events_fd_);
}

void WorkerProcess::DrainStderr(int fd) {
  std::string partial;
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial.append(buf, static_cast<size_t>(n));
    size_t newline;
    while ((newline = partial.find('\n')) != std::string::npos) {
      absl::MutexLock lock(&mu_);
      stderr_lines_.push_back(partial.substr(0, newline));
      if (stderr_lines_.size() > kStderrLinesKept) stderr_lines_.pop_front();
      partial.erase(0, newline + 1);
    }
  }
  if (!partial.empty()) {
    absl::MutexLock lock(&mu_);
    stderr_lines_.push_back(partial);
    if (stderr_lines_.size() > kStderrLinesKept) stderr_lines_.pop_front();
  }
  close(fd);
}

WorkerProcess::ReadResult WorkerProcess::Read(google::protobuf::Message* message,
                                              absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    bool got_one = false;
    if (!reader_.Next(message, &got_one).ok()) {
      Kill();  // a worker that sends garbage cannot be trusted to finish
      return ReadResult::kEnd;
    }
    if (got_one) return ReadResult::kEvent;
    // Past the deadline (or a zero timeout) still looks once without waiting.
    // Clamped to poll's int (an infinite timeout, as the device probe waits, would not fit).
    const int64_t wait_ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(deadline - absl::Now()),
                                                0, std::numeric_limits<int>::max());
    pollfd pfd{events_fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(wait_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return ReadResult::kTimeout;
    char buf[65536];
    const ssize_t n = read(events_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadResult::kEnd;
    reader_.Append(buf, static_cast<size_t>(n));
  }
}

void WorkerProcess::Signal(int signal) {
  absl::MutexLock lock(&reap_mu_);
  if (reaped_) return;
  kill(pid_, signal);
  signalled_ = true;
}

void WorkerProcess::Terminate() { Signal(SIGTERM); }

void WorkerProcess::Suspend() { Signal(SIGUSR1); }

void WorkerProcess::Kill() { Signal(SIGKILL); }

WorkerProcess::Exit WorkerProcess::Wait() {
  if (idle()) return Exit{kWorkerSucceeded, 0, StderrTail()};
  return Reap();
}

std::string WorkerProcess::StderrTail() {
  absl::MutexLock lock(&mu_);
  return absl::StrJoin(stderr_lines_, "\n");
}

WorkerProcess::Exit WorkerProcess::Reap() {
  Exit exit;
  // Waits for the exit without reaping (WNOWAIT), holding no lock: the zombie keeps its pid, so a
  // signal sent meanwhile reaches it and nothing else. Then reaps under the lock.
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  int status = 0;
  {
    absl::MutexLock lock(&reap_mu_);
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (WIFEXITED(status)) exit.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  if (stderr_thread_.joinable()) stderr_thread_.join();
  exit.stderr_tail = StderrTail();
  return exit;
}

std::string WorkerProcess::Exit::Describe() const {
  std::string what =
      signal != 0 ? absl::StrCat("worker killed by signal ", signal, " (", strsignal(signal), ")")
                  : absl::StrCat("worker exited with code ", exit_code);
  if (!stderr_tail.empty()) absl::StrAppend(&what, "; last stderr lines:\n", stderr_tail);
  return what;
}

bool WorkerProcess::Exit::clean() const { return signal == 0 && exit_code == kWorkerSucceeded; }

trainer::v1::ProcessExit WorkerProcess::Exit::ToProto() const {
  trainer::v1::ProcessExit proto;
  proto.set_exit_code(exit_code);
  proto.set_signal(signal);
  proto.set_stderr_tail(stderr_tail);
  return proto;
}

WorkerProcess::Exit WorkerProcess::Exit::FromProto(const trainer::v1::ProcessExit& proto) {
  return Exit{proto.exit_code(), proto.signal(), proto.stderr_tail()};
}

}  // namespace traind
