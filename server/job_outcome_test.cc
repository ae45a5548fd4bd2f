#include "server/job_outcome.h"

#include <signal.h>

#include "gtest/gtest.h"
#include "supervise/worker_exit.h"

namespace traind {
namespace {

using trainer::v1::Job;
using Kind = Outcome::Kind;

OutcomeFacts Exited(int exit_code) {
  OutcomeFacts facts;
  facts.exit.exit_code = exit_code;
  return facts;
}

OutcomeFacts Killed(int signal_number) {
  OutcomeFacts facts;
  facts.exit.exit_code = -1;
  facts.exit.signal = signal_number;
  facts.failed_rank = 0;
  return facts;
}

TEST(JobOutcomeTest, AResultMeansSuccessWhateverCameAfter) {
  OutcomeFacts stored = Killed(SIGKILL);
  stored.result_stored = true;
  stored.cancelled = true;
  EXPECT_EQ(DecideOutcome(stored).kind, Kind::kResultStored);

  OutcomeFacts clean = Exited(kWorkerSucceeded);
  clean.got_result = true;
  const Outcome outcome = DecideOutcome(clean);
  EXPECT_EQ(outcome.kind, Kind::kSucceeded);
  EXPECT_EQ(outcome.state, Job::SUCCEEDED);
  EXPECT_FALSE(outcome.counts_as_crash);
}

// A cancel recorded while it ran wins over how its worker ended; then its time limit; then a
// shutdown, which re-queues it to resume.
TEST(JobOutcomeTest, CancelThenTimeLimitThenShutdown) {
  OutcomeFacts facts = Killed(SIGTERM);
  facts.cancelled = true;
  facts.timed_out = true;
  facts.shutting_down = true;
  EXPECT_EQ(DecideOutcome(facts).state, Job::CANCELLED);
  facts.cancelled = false;
  facts.time_limit = "2:00:00";
  Outcome outcome = DecideOutcome(facts);
  EXPECT_EQ(outcome.kind, Kind::kTimedOut);
  EXPECT_EQ(outcome.reason, "stopped: it reached its time limit (--time 2:00:00)");
  facts.timed_out = false;
  outcome = DecideOutcome(facts);
  EXPECT_EQ(outcome.kind, Kind::kRequeuedByShutdown);
  EXPECT_EQ(outcome.state, Job::QUEUED);

  OutcomeFacts stopped = Exited(kWorkerStopped);
  stopped.shutting_down = true;
  EXPECT_EQ(DecideOutcome(stopped).kind, Kind::kRequeuedByShutdown);
  // A job's own failure during a shutdown is still its failure.
  OutcomeFacts failed = Exited(kWorkerJobFailed);
  failed.shutting_down = true;
  failed.reported_error = "loss is NaN";
  EXPECT_EQ(DecideOutcome(failed).kind, Kind::kFailedByJob);
}

// A search's trial that paused at its rung waits for the search; a cancel or time limit that came
// while it ran still wins.
TEST(JobOutcomeTest, ATrialPausedAtItsRungIsPausedUnlessCancelled) {
  OutcomeFacts paused = Exited(kWorkerPaused);
  paused.failed_rank = 0;
  Outcome outcome = DecideOutcome(paused);
  EXPECT_EQ(outcome.kind, Kind::kPaused);
  EXPECT_EQ(outcome.state, Job::PAUSED);
  EXPECT_FALSE(outcome.counts_as_crash);
  paused.shutting_down = true;  // it had paused already: the shutdown changes nothing
  EXPECT_EQ(DecideOutcome(paused).kind, Kind::kPaused);
  paused.cancelled = true;
  EXPECT_EQ(DecideOutcome(paused).kind, Kind::kCancelled);
}

TEST(JobOutcomeTest, AKilledWorkerResumesFromItsCheckpointAFewTimes) {
  OutcomeFacts facts = Killed(SIGKILL);
  facts.checkpointed = true;
  Outcome outcome = DecideOutcome(facts);
  EXPECT_EQ(outcome.kind, Kind::kResumeAfterCrash);
  EXPECT_EQ(outcome.state, Job::QUEUED);
  EXPECT_TRUE(outcome.counts_as_crash);
  EXPECT_EQ(outcome.reason,
            "worker killed by signal 9 (Killed); the job restarts from the last checkpoint "
            "(restart 1 of 3)");
  facts.script_job = true;
  facts.ranks = 2;
  facts.failed_rank = 1;
  facts.crash_restarts = 2;
  EXPECT_EQ(DecideOutcome(facts).reason,
            "rank 1: the program's runner killed by signal 9 (Killed); every rank restarts from "
            "the last checkpoint (restart 3 of 3)");
  facts.crash_restarts = kMaxCrashRestarts;
  outcome = DecideOutcome(facts);
  EXPECT_EQ(outcome.kind, Kind::kCrashed);
  EXPECT_EQ(outcome.state, Job::FAILED);
  EXPECT_EQ(outcome.reason.rfind("rank 1: worker killed by signal 9 (Killed)", 0), 0u)
      << outcome.reason;
  // No checkpoint: nothing to resume from.
  OutcomeFacts fresh = Killed(SIGKILL);
  EXPECT_EQ(DecideOutcome(fresh).kind, Kind::kCrashed);
}

TEST(JobOutcomeTest, HostsUnavailableWaitOnlyForAJobOnHosts) {
  OutcomeFacts facts = Exited(kWorkerHostLost);
  facts.failed_rank = 0;
  facts.on_hosts = true;
  facts.reported_error = "host b went away";
  Outcome outcome = DecideOutcome(facts);
  EXPECT_EQ(outcome.kind, Kind::kWaitForHosts);
  EXPECT_TRUE(outcome.hosts_afresh);
  EXPECT_EQ(outcome.reason, "host b went away");
  facts.exit.exit_code = kWorkerHostsUnavailable;
  EXPECT_FALSE(DecideOutcome(facts).hosts_afresh);
  facts.on_hosts = false;  // a worker that says so without hosts is broken
  EXPECT_EQ(DecideOutcome(facts).kind, Kind::kCrashed);
}

TEST(JobOutcomeTest, ItsOwnErrorOrHowTheWorkerEnded) {
  OutcomeFacts failed = Exited(kWorkerJobFailed);
  failed.failed_rank = 0;
  failed.reported_error = "dataset: no such file";
  Outcome outcome = DecideOutcome(failed);
  EXPECT_EQ(outcome.kind, Kind::kFailedByJob);
  EXPECT_EQ(outcome.reason, "dataset: no such file");
  EXPECT_FALSE(outcome.counts_as_crash);
  // Exit 1 without an error of its own, or any other exit: a crash, described.
  failed.reported_error.clear();
  outcome = DecideOutcome(failed);
  EXPECT_EQ(outcome.kind, Kind::kCrashed);
  EXPECT_TRUE(outcome.counts_as_crash);
  EXPECT_EQ(outcome.reason.rfind("worker exited with code 1", 0), 0u) << outcome.reason;
}

}  // namespace
}  // namespace traind
