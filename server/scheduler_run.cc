// Scheduler's supervision of one running job: starting its processes through the launcher,
// storing what its ranks report, and recording what its end means (server/job_outcome.h).
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/program_pid_file.h"
#include "common/script_spec.h"
#include "common/time_limit.h"
#include "server/job_outcome.h"
#include "server/scheduler.h"
#include "supervise/rank_events.h"
#include "supervise/worker_exit.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

// A built-in job's checkpoint, or what a program saved in TRAIND_CHECKPOINT_DIR (its runner,
// traind-script, killed: the program died with it and starts again where it saved).
static bool HasCheckpoint(const Job& job, const std::string& job_dir) {
  std::error_code error;
  return IsScriptJob(job.spec())
             ? !std::filesystem::is_empty(job_dir + "/checkpoints", error) && !error
             : access((job_dir + "/checkpoint.pt").c_str(), F_OK) == 0;
}

void Scheduler::Supervise(Running* running) {
  const Job& job = running->job;
  auto finish = [&] {
    absl::MutexLock lock(&mu_);
    running->workers.clear();
    running->done = true;
    wake_ = true;
  };
  absl::StatusOr<trainer::v1::WorkerRequest> request = RequestFor(job, options_.requests);
  if (request.ok()) request->set_cpu_sharers(running->cpu_sharers);
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> started =
      request.ok() ? options_.launcher->Launch(*request, running->devices) : request.status();
  if (!started.ok()) {
    (void)EndDurably(job.id(), Job::FAILED, std::string(started.status().message()));
    finish();
    return;
  }
  if (started->size() > 1) LogStartedRanks(job.id(), *started, running->devices);
  RankGroup ranks(*std::move(started));
  const absl::StatusOr<absl::Duration> time_limit =
      job.spec().time_limit().empty() || IsSlurmJob(job.spec())
          ? absl::InfiniteDuration()
          : ParseTimeLimit(job.spec().time_limit());
  {
    absl::MutexLock lock(&mu_);
    // Admitted at submit; a limit stored by an older daemon that no longer reads is no limit.
    if (time_limit.ok()) running->time_limit_at = absl::Now() + *time_limit;
    for (int r = 0; r < ranks.size(); ++r) running->workers.push_back(&ranks.rank(r));
    if (shutting_down_ || running->cancel_requested) ranks.TerminateAll();
  }
  const RanksEnded ended = PumpRanks(running, ranks);
  RecordOutcome(job, request->job_dir(), ranks, ended, running);
  // A packed trial's worker that stays for another goes back before the devices are released,
  // so that the search's next trial there finds it (RecordOutcome has let go of the workers: no
  // cancel can signal it now).
  for (int r = 0; r < ranks.size() && r < static_cast<int>(running->devices.size()); ++r) {
    if (std::unique_ptr<WorkerProcess> idle = ranks.TakeIdle(r)) {
      options_.launcher->TakeBack(std::move(idle), running->devices[r]);
    }
  }
  finish();
}

void Scheduler::LogStartedRanks(int64_t job_id,
                                const std::vector<std::unique_ptr<WorkerProcess>>& workers,
                                const std::vector<std::string>& devices) {
  std::vector<std::string> placed;
  for (size_t r = 0; r < workers.size(); ++r) {
    placed.push_back(absl::StrCat("rank ", r, " pid ", workers[r]->pid(), " on ", devices[r]));
  }
  JobEvent started_ranks;
  started_ranks.mutable_log()->set_text(
      absl::StrCat("Started ", workers.size(),
                   " ranks (data parallel, one worker each): ", absl::StrJoin(placed, ", ")));
  (void)Record(job_id, std::move(started_ranks));
}

Scheduler::RanksEnded Scheduler::PumpRanks(Running* running, RankGroup& ranks) {
  const int64_t job_id = running->job.id();
  // Rank 0 reports for the job; the others write only their errors.
  RanksEnded ended;
  std::vector<JobEvent> burst;
  RankGroup::Callbacks callbacks;
  callbacks.on_event = [&](int r, JobEvent event) {
    event.clear_seq();  // the daemon owns seq and state: a worker may not forge either
    if (!ended.events.Accept(&event, ranks.size() > 1 ? absl::StrCat("rank ", r, ": ") : "")) {
      return;
    }
    if (event.has_step()) hub_->latency().Record(EventLatency::kReceived, event.time());
    burst.push_back(std::move(event));
  };
  callbacks.on_burst_end = [&](int) { StoreEvents(job_id, &burst); };
  callbacks.on_events_ended = [&](int, bool last) {
    StoreEvents(job_id, &burst);  // none left: RankGroup ends a burst before its rank's end
    // When the last rank's events end, every other rank having ended well and the result being
    // stored, the job is SUCCEEDED at once; that process is reaped after (a CUDA process's exit
    // takes the kernel 0.1-0.2 s), and the devices are released only then.
    if (last && ranks.failed_rank() < 0 && ended.events.got_result() &&
        ended.events.first_error().empty()) {
      ended.succeeded_at_end_of_events = Transition(job_id, Job::SUCCEEDED, "");
    }
  };
  while (ranks.alive() > 0) {
    {
      absl::MutexLock lock(&mu_);  // cancel and shutdown signal the workers from other threads
      if (!running->timed_out && absl::Now() >= running->time_limit_at) {
        running->timed_out = true;  // stopped as a cancel stops it; RecordOutcome says why
        ranks.TerminateAll();
        running->kill_deadline =
            std::min(running->kill_deadline, absl::Now() + options_.cancel_grace);
      }
      if (running->cancel_requested || running->timed_out || shutting_down_) {
        ranks.MarkStopping();
      }
    }
    ranks.PumpRound(callbacks);
    absl::MutexLock lock(&mu_);
    if (absl::Now() >= running->kill_deadline) ranks.KillAll();
  }
  return ended;
}

void Scheduler::StoreEvents(int64_t job_id, std::vector<JobEvent>* burst) {
  if (burst->empty()) return;
  const absl::Status stored_at_once = store_->AppendEvents(job_id, burst);
  std::vector<JobEvent> stored_one_by_one;
  if (!stored_at_once.ok()) {
    // All or none were stored: one at a time, so that one event the store refuses does not take
    // a burst of others (the result among them) with it. One line per burst, not per event: a
    // failing store would otherwise flood the log with a program's output.
    int refused = 0;
    absl::Status first_refusal;
    for (JobEvent& event : *burst) {
      absl::StatusOr<JobEvent> one = store_->AppendEvent(job_id, std::move(event));
      if (one.ok()) {
        stored_one_by_one.push_back(*std::move(one));
      } else if (refused++ == 0) {
        first_refusal = one.status();
      }
    }
    LogAt(LogPriority::kError) << "traind: job " << job_id << ": cannot store " << burst->size()
                               << " events at once (" << stored_at_once << "); one by one, "
                               << refused << " of them were refused too"
                               << (refused > 0 ? ", the first: " : "")
                               << (refused > 0 ? first_refusal.ToString() : "") << "\n";
  }
  for (const JobEvent& event : stored_at_once.ok() ? *burst : stored_one_by_one) {
    if (event.has_step()) hub_->latency().Record(EventLatency::kStored, event.time());
  }
  burst->clear();
}

absl::Status Scheduler::EndDurably(int64_t job_id, Job::State state, const std::string& reason) {
  absl::Status stored = Transition(job_id, state, reason);
  for (int attempt = 0; absl::IsResourceExhausted(stored); ++attempt) {
    if (attempt == 0) {
      const bool released = options_.disk_reserve != nullptr && options_.disk_reserve->Release();
      LogAt(LogPriority::kError)
          << "traind: job " << job_id << ": the disk holding traind's state is full ("
          << stored.message() << ")"
          << (released ? "; gave back its reserve to store the job's end"
                       : "; storing the job's end again every second until there is room")
          << "\n";
    } else {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&shutting_down_), absl::Seconds(1))) return stored;
    }
    stored = Transition(job_id, state, reason);
  }
  return stored;
}

void Scheduler::RecordOutcome(const Job& job, const std::string& job_dir, const RankGroup& ranks,
                              const RanksEnded& ended, Running* running) {
  OutcomeFacts facts;
  facts.failed_rank = ranks.failed_rank();
  facts.exit = *ranks.exit(facts.failed_rank >= 0 ? facts.failed_rank : 0);
  facts.ranks = ranks.size();
  facts.result_stored = ended.succeeded_at_end_of_events.has_value();
  facts.got_result = ended.events.got_result();
  facts.script_job = IsScriptJob(job.spec());
  facts.checkpointed = facts.exit.signal != 0 && HasCheckpoint(job, job_dir);
  facts.on_hosts = !job.spec().hosts().empty();
  facts.reported_error = ended.events.first_error();
  facts.time_limit = job.spec().time_limit();
  {
    absl::MutexLock lock(&mu_);
    running->workers.clear();
    facts.cancelled = running->cancel_requested;
    facts.shutting_down = shutting_down_;
    facts.timed_out = running->timed_out;
    // find, not []: an entry only for the jobs that did restart.
    const auto restarts = crash_restarts_.find(job.id());
    facts.crash_restarts = restarts == crash_restarts_.end() ? 0 : restarts->second;
  }
  // A runner killed (the OOM killer, kill -9) leaves what its program started; end it now.
  if (facts.script_job && KillLeftoverPrograms(job_dir, ranks.size()) > 0) {
    LogAt(LogPriority::kWarning) << "traind: job " << job.id()
                                 << ": killed what its program left running\n";
  }
  const Outcome outcome = DecideOutcome(facts);
  if (outcome.counts_as_crash) worker_crashes_.fetch_add(1, std::memory_order_relaxed);
  absl::Status recorded;
  switch (outcome.kind) {
    case Outcome::Kind::kResultStored:
      recorded = *ended.succeeded_at_end_of_events;
      if (absl::IsResourceExhausted(recorded)) recorded = EndDurably(job.id(), Job::SUCCEEDED, "");
      if (facts.failed_rank >= 0) {  // the result stands; say what happened after it
        LogAt(LogPriority::kWarning) << "traind: job " << job.id() << ": the worker ended with "
                                     << facts.exit.Describe() << " after its result\n";
      }
      break;
    case Outcome::Kind::kWaitForHosts:
      recorded = WaitForHosts(job, outcome.reason, outcome.hosts_afresh);
      break;
    case Outcome::Kind::kResumeAfterCrash: {
      absl::MutexLock lock(&mu_);
      ++crash_restarts_[job.id()];
    }
      [[fallthrough]];
    default:
      recorded = EndDurably(job.id(), outcome.state, outcome.reason);
  }
  if (!recorded.ok())
    LogAt(LogPriority::kError) << "traind: job " << job.id() << ": " << recorded << "\n";
  if (facts.exit.exit_code != kWorkerHostsUnavailable && facts.exit.exit_code != kWorkerHostLost) {
    absl::MutexLock lock(&mu_);
    host_waits_.erase(job.id());
  }
  if (options_.on_job_ended) options_.on_job_ended();
}

}  // namespace traind
