// The process side of traind's worker protocol (proto/trainer/v1/worker.proto), shared by every
// program traind starts in a worker's place (traind-worker, traind-slurm) and by what srun starts
// for a rank (traind-slurm-task): the request on stdin, events on a private copy of stdout, and
// the stop signals: SIGTERM or SIGINT stop (a cancel); SIGUSR1 checkpoints first, then stops
// (traind shutting down, or gone).
#ifndef TRAIND_SUPERVISE_WORKER_SIDE_H_
#define TRAIND_SUPERVISE_WORKER_SIDE_H_

#include <atomic>

#include "trainer/v1/worker.pb.h"

namespace traind {

// Libraries may print to stdout: the event stream moves to a private descriptor (returned) and
// stdout is pointed at stderr.
int TakeStdoutForEvents();

// What the signals asked for. `suspend` implies `stop`.
struct StopFlags {
  std::atomic<bool> stop{false};
  std::atomic<bool> suspend{false};
};
// Installs the handlers (SIGPIPE is ignored too) and returns the flags they set. Once, early in
// main.
StopFlags& InstallStopSignals();

// Asks for `signal` when the process that started this one dies (Linux PR_SET_PDEATHSIG; a no-op
// elsewhere) and says whether that parent is still there: false when it died before the request
// took hold. The parent is the pid WorkerProcess hands its workers in TRAIND_PARENT_PID, not
// "anything but 1": traind may itself be PID 1 (a container's init), and an orphan may be taken
// by a subreaper. Started by hand (no TRAIND_PARENT_PID), the parent counts as there.
bool StopWithParent(int signal);

enum class RequestRead { kRead, kClosed, kUnreadable };
// One length-delimited WorkerRequest from stdin. kClosed: stdin closed without one (a pre-started
// worker traind no longer needs); kUnreadable: bytes that are not one.
RequestRead ReadWorkerRequest(trainer::v1::WorkerRequest* request);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_WORKER_SIDE_H_
