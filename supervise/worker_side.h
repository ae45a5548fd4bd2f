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

enum class RequestRead { kRead, kClosed, kUnreadable };
// One length-delimited WorkerRequest from stdin. kClosed: stdin closed without one (a pre-started
// worker traind no longer needs); kUnreadable: bytes that are not one.
RequestRead ReadWorkerRequest(trainer::v1::WorkerRequest* request);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_WORKER_SIDE_H_
