// How traind-worker ends, as its exit status: the one list both sides use (worker/main.cc exits
// with these; server/scheduler.cc reads them).
#ifndef TRAIND_SUPERVISE_WORKER_EXIT_H_
#define TRAIND_SUPERVISE_WORKER_EXIT_H_

namespace traind {

enum WorkerExit : int {
  kWorkerSucceeded = 0,   // the job's result was written to the event pipe
  kWorkerJobFailed = 1,   // the job failed; its error was written to the event pipe first
  kWorkerBadRequest = 2,  // no (or an unreadable) WorkerRequest on stdin, or a usage error
  kWorkerStopped = 3,     // stopped on request (SIGTERM/SIGINT) or because traind went away
  // traind-hosts only: a host of the job could not take it, or was lost while it ran (its error
  // was written first); traind re-queues the job to try again (Scheduler::WaitForHosts).
  kWorkerHostsUnavailable = 4,
  // traind-hosts only: a host went away while the job ran (its error was written first); as 4,
  // but the wait for the hosts starts afresh (the job did run since it last waited).
  kWorkerHostLost = 5,
  // A search's trial paused at its rung (WorkerRequest.pause_after_epoch), its checkpoint
  // written: traind marks the job PAUSED, and the search resumes it or ends it.
  kWorkerPaused = 6,
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_WORKER_EXIT_H_
