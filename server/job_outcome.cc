#include "server/job_outcome.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "supervise/worker_exit.h"

namespace traind {

namespace {

using trainer::v1::Job;

// "rank 2: " where a rank of several failed.
std::string Who(const OutcomeFacts& facts) {
  return facts.ranks > 1 && facts.failed_rank >= 0 ? absl::StrCat("rank ", facts.failed_rank, ": ")
                                                   : "";
}

// A worker killed or crashed (not one that reported an error of the job's own) is a fault of
// the machine or of one process (the OOM killer, kill -9): the job starts again from its
// checkpoint, as a killed daemon's jobs do, a few times at most.
bool ResumesAfterCrash(const OutcomeFacts& facts) {
  return facts.exit.signal != 0 && facts.checkpointed && facts.crash_restarts < kMaxCrashRestarts;
}

std::string ResumeReason(const OutcomeFacts& facts) {
  return absl::StrCat(Who(facts), facts.script_job ? "the program's runner" : "worker",
                      " killed by signal ", facts.exit.signal, " (", strsignal(facts.exit.signal),
                      "); ", facts.ranks > 1 ? "every rank restarts" : "the job restarts",
                      " from the last checkpoint (restart ", facts.crash_restarts + 1, " of ",
                      kMaxCrashRestarts, ")");
}

}  // namespace

Outcome DecideOutcome(const OutcomeFacts& facts) {
  using Kind = Outcome::Kind;
  const WorkerProcess::Exit& exit = facts.exit;
  if (facts.result_stored) return {Kind::kResultStored, Job::SUCCEEDED, ""};
  if (facts.failed_rank < 0 && facts.got_result) return {Kind::kSucceeded, Job::SUCCEEDED, ""};
  if (facts.cancelled) return {Kind::kCancelled, Job::CANCELLED, "cancelled by request"};
  if (facts.timed_out) {
    return {Kind::kTimedOut, Job::FAILED,
            absl::StrCat("stopped: it reached its time limit (--time ", facts.time_limit, ")")};
  }
  if (exit.exit_code == kWorkerPaused) {
    return {Kind::kPaused, Job::PAUSED,
            facts.reported_error.empty() ? "paused at its search's rung" : facts.reported_error};
  }
  if (facts.shutting_down && (exit.exit_code == kWorkerStopped || exit.signal != 0)) {
    return {Kind::kRequeuedByShutdown, Job::QUEUED, "re-queued: the daemon is shutting down"};
  }
  if (ResumesAfterCrash(facts)) {
    return {Kind::kResumeAfterCrash, Job::QUEUED, ResumeReason(facts), /*counts_as_crash=*/true};
  }
  if ((exit.exit_code == kWorkerHostsUnavailable || exit.exit_code == kWorkerHostLost) &&
      facts.on_hosts) {
    return {Kind::kWaitForHosts, Job::QUEUED,
            facts.reported_error.empty() ? exit.Describe() : facts.reported_error,
            /*counts_as_crash=*/false, /*hosts_afresh=*/exit.exit_code == kWorkerHostLost};
  }
  if (exit.exit_code == kWorkerJobFailed && !facts.reported_error.empty()) {
    return {Kind::kFailedByJob, Job::FAILED, facts.reported_error};
  }
  return {Kind::kCrashed, Job::FAILED, absl::StrCat(Who(facts), exit.Describe()),
          /*counts_as_crash=*/true};
}

}  // namespace traind
