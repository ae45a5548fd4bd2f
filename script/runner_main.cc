// traind-script: runs one start of a script job (JobSpec.script: a user's program), started by
// traind in a worker's place (one per rank). To traind it is a worker: the WorkerRequest on
// stdin, the job's events on stdout, an exit status from supervise/worker_exit.h, SIGTERM to
// cancel and SIGUSR1 to stop for a shutdown (both reach the program as SIGTERM). Behind that it
// runs the program (script_run.h). It links no LibTorch: its start costs milliseconds, so it is
// started for each job rather than kept warm.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "script/script_run.h"
#include "supervise/event_pipe.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_side.h"

int main(int argc, char** argv) {
  (void)argv;
  const int events_fd = traind::TakeStdoutForEvents();
  // Not the program's to inherit (ProgramProcess closes the rest at exec).
  fcntl(events_fd, F_SETFD, FD_CLOEXEC);
  traind::EventPipeWriter pipe(events_fd);
  if (argc != 1) {
    std::fprintf(stderr,
                 "usage: traind-script  (started by traind: a WorkerRequest on stdin, "
                 "proto/trainer/v1/worker.proto)\n");
    return traind::kWorkerBadRequest;
  }
  // If traind dies (even kill -9), the program is stopped as for a shutdown, and a new traind
  // re-queues the job.
  if (!traind::StopWithParent(SIGUSR1)) return traind::kWorkerStopped;  // it died already
  traind::StopFlags& signals = traind::InstallStopSignals();

  trainer::v1::WorkerRequest request;
  switch (traind::ReadWorkerRequest(&request)) {
    case traind::RequestRead::kRead:
      break;
    case traind::RequestRead::kClosed:
      return traind::kWorkerStopped;
    case traind::RequestRead::kUnreadable:
      std::fprintf(stderr, "traind-script: could not read a WorkerRequest on stdin\n");
      return traind::kWorkerBadRequest;
  }
  if (!request.spec().has_script()) {
    std::fprintf(stderr, "traind-script: the request is not a script job's\n");
    return traind::kWorkerBadRequest;
  }
  traind::ScriptRun::Options options;
  // How long a program may take to stop after SIGTERM; for tests, and operators whose programs
  // checkpoint slowly (traind's own grace, --cancel-grace, must be longer).
  if (const char* grace = std::getenv("TRAIND_SCRIPT_STOP_GRACE_MS"); grace != nullptr) {
    options.stop_grace = absl::Milliseconds(std::atoi(grace));
  }
  if (const char* rank = std::getenv("RANK"); rank != nullptr) options.rank = std::atoi(rank);
  if (const char* nice = std::getenv("TRAIND_WORKER_NICE"); nice != nullptr) {
    options.program_nice = std::clamp(std::atoi(nice), 0, 19);
    options.runner_nice = std::clamp(options.program_nice + 5, 0, 19);
  }
  const int status = traind::ScriptRun(request, &pipe, signals, options).Run();
  pipe.Close();
  return status;
}
