// The scheduler's outcome room: what a job's end means, decided from what is known once its
// workers have exited (did it store a result, was it cancelled, timed out, stopped by traind's
// shutdown, paused at a search's rung, killed with a checkpoint to resume from, left waiting for
// hosts, failed by its own error, or crashed). Pure: no store, no locks, no processes.
// Scheduler::RecordOutcome gathers the facts, asks DecideOutcome and applies the verdict
// (docs/architecture.md).
#ifndef TRAIND_SERVER_JOB_OUTCOME_H_
#define TRAIND_SERVER_JOB_OUTCOME_H_

#include <string>

#include "supervise/worker_process.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// Restarts from a checkpoint after a worker was killed, per job and daemon.
inline constexpr int kMaxCrashRestarts = 3;

struct OutcomeFacts {
  bool result_stored = false;  // the end of its events already stored SUCCEEDED
  bool got_result = false;     // a result among its events
  int failed_rank = -1;        // the first rank that did not end cleanly; -1: none
  WorkerProcess::Exit exit;    // that rank's exit, else rank 0's
  int ranks = 1;
  bool cancelled = false;      // a cancel was recorded while it ran
  bool timed_out = false;      // it reached its --time
  bool shutting_down = false;  // traind is stopping
  bool script_job = false;     // a user's program (its runner is what the exit describes)
  bool checkpointed = false;   // a checkpoint to resume from exists
  int crash_restarts = 0;      // restarts after a kill so far
  bool on_hosts = false;       // a job on several hosts (--hosts)
  std::string reported_error;  // the first error among its events
  std::string time_limit;      // its --time, as given
};

struct Outcome {
  enum class Kind {
    kResultStored,  // already SUCCEEDED (a rank's later exit is only worth a warning)
    kSucceeded,
    kCancelled,
    kTimedOut,            // FAILED
    kPaused,              // PAUSED: a search's trial at its rung (the search resumes or ends it)
    kRequeuedByShutdown,  // QUEUED: resumes from its checkpoint when traind starts again
    kResumeAfterCrash,    // QUEUED: a kill with a checkpoint; counts one crash restart
    kWaitForHosts,        // Scheduler::WaitForHosts decides (re-queued, or FAILED after long)
    kFailedByJob,         // FAILED with its own error
    kCrashed,             // FAILED with how its worker ended
  };
  Kind kind = Kind::kCrashed;
  trainer::v1::Job::State state = trainer::v1::Job::FAILED;
  std::string reason;            // what the job's record says
  bool counts_as_crash = false;  // traind_worker_crashes_total
  bool hosts_afresh = false;     // kWaitForHosts: the wait starts again (a host was lost)
};

Outcome DecideOutcome(const OutcomeFacts& facts);

}  // namespace traind

#endif  // TRAIND_SERVER_JOB_OUTCOME_H_
