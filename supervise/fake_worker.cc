// A stand-in for traind-worker in supervise_test: it reads its WorkerRequest as a worker does,
// sends one log event naming the job, then does what FAKE_WORKER_MODE says: "succeed" (exit 0),
// "signal" (a line on stderr, then SIGKILL from itself: the OOM killer's way), "hang" (ignores
// SIGTERM and waits forever: only SIGKILL ends it), "stopped" (exits kWorkerStopped, as a worker
// that was asked to stop), "stop-on-term" (waits for SIGTERM, then exits kWorkerStopped, as a
// worker told to stop does), "burst" (600 more log events "event N" at once, then exit 0),
// "result" (a final result with test accuracy 0.5, then exit 0: a job that succeeded),
// "idle-unasked" (says it is idle without being asked to serve another, then waits for SIGKILL). A
// request with serve_another adds " (serves another)" to the greeting and, in the modes that end
// with exit 0, has it say it is idle (JobEvent.worker_idle) and read the next request instead. Like
// every worker it checks that the process that started it is still its parent (StopWithParent), and
// exits kWorkerStopped without a word if not. Started with --fork-server it is a fork server
// (supervise/fork_server.h) whose children go on as above, their greeting ending " (forked)".
// FAKE_WORKER_ECHO=NAME adds " NAME=value" to the greeting.
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "supervise/event_pipe.h"
#include "supervise/fork_server.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_side.h"

namespace {

// " NAME=value" of the variable FAKE_WORKER_ECHO names ("" when it names none): read from the
// environment the process has, which a forked one's /proc/PID/environ does not show.
std::string Echoed() {
  const char* name = std::getenv("FAKE_WORKER_ECHO");
  if (name == nullptr) return "";
  const char* value = std::getenv(name);
  return std::string(" ") + name + "=" + (value == nullptr ? "" : value);
}

// Whether glibc's record of this thread's id (in its thread descriptor, from which
// pthread_getcpuclockid builds the thread's clock) is the kernel's: a forked child's must be
// (supervise/fork_server.h).
bool ThreadIdIsOwn() {
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return false;
  const auto tid = static_cast<unsigned int>(syscall(SYS_gettid));
  return clock == static_cast<clockid_t>((~tid << 3) | 6);  // glibc's MAKE_THREAD_CPUCLOCK
}

// One job as FAKE_WORKER_MODE says; the exit code when the process ends with it, nullopt when
// it ended well and `request` asked it to serve another (the caller says it is idle).
std::optional<int> RunJob(const trainer::v1::WorkerRequest& request, const std::string& mode,
                          bool forked, traind::EventPipeWriter& pipe) {
  trainer::v1::JobEvent event;
  event.mutable_log()->set_text("fake worker for job " + std::to_string(request.job_id()) + ": " +
                                mode + (forked ? " (forked)" : "") +
                                (ThreadIdIsOwn() ? "" : " (stale thread id)") +
                                (request.serve_another() ? " (serves another)" : "") + Echoed());
  pipe.Write(event);
  if (mode == "signal") {
    std::fprintf(stderr, "fake worker: out of memory, about to be killed\n");
    std::fflush(stderr);
    raise(SIGKILL);
  }
  if (mode == "hang") {
    while (true) pause();
  }
  if (mode == "stop-on-term") {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    int signal_number = 0;
    sigwait(&term, &signal_number);
    return traind::kWorkerStopped;
  }
  if (mode == "burst") {
    for (int n = 0; n < 600; ++n) {
      event.mutable_log()->set_text("event " + std::to_string(n));
      pipe.Write(event);
    }
  }
  if (mode == "result") {
    event.mutable_final_result()->set_test_accuracy(0.5);
    pipe.Write(event);
  }
  if (mode == "stopped") return traind::kWorkerStopped;
  if (mode == "idle-unasked") {  // says it is idle, then waits: only the kill that earns ends it
    trainer::v1::JobEvent idle;
    idle.mutable_worker_idle()->set_jobs_served(1);
    pipe.Write(idle);
    while (true) pause();
  }
  if (request.serve_another()) return std::nullopt;
  return traind::kWorkerSucceeded;
}

}  // namespace

int main(int argc, char** argv) {
  bool forked = false;
  if (argc == 2 && std::string(argv[1]) == traind::kForkServerFlag) {
    traind::ServeForks(0, argv);  // returns in a forked child
    forked = true;
  }
  const int events = traind::TakeStdoutForEvents();
  traind::EventPipeWriter pipe(events);
  const char* mode_env = std::getenv("FAKE_WORKER_MODE");
  const std::string mode = mode_env == nullptr ? "succeed" : mode_env;
  for (int served = 1;; ++served) {
    trainer::v1::WorkerRequest request;
    const traind::RequestRead read = traind::ReadWorkerRequest(&request);
    if (read == traind::RequestRead::kClosed && served > 1) return traind::kWorkerStopped;
    if (read != traind::RequestRead::kRead) return traind::kWorkerBadRequest;
    if (served == 1) {
      // After the request (a real worker checks first): WorkerProcess::Start's write must not
      // race the exit.
      if (!traind::StopWithParent(SIGUSR1)) return traind::kWorkerStopped;
      // Before the greeting: a test that has read it may send SIGTERM at once.
      if (mode == "hang") signal(SIGTERM, SIG_IGN);
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      if (mode == "stop-on-term") sigprocmask(SIG_BLOCK, &term, nullptr);  // sigwait takes it
    }
    if (std::optional<int> exit_code = RunJob(request, mode, forked, pipe)) {
      pipe.Close();
      return *exit_code;
    }
    trainer::v1::JobEvent idle;
    idle.mutable_worker_idle()->set_jobs_served(served);
    pipe.Write(idle);
  }
}
