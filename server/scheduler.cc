#include "server/scheduler.h"

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/job_fold.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

namespace {
// Exit codes of traind-worker (worker/main.cc).
constexpr int kWorkerJobFailed = 1;
constexpr int kWorkerCancelled = 3;
}  // namespace

Scheduler::Scheduler(Store* store, EventHub* hub, Options options)
    : store_(store), hub_(hub), options_(std::move(options)) {}

Scheduler::~Scheduler() { Shutdown(); }

absl::StatusOr<JobEvent> Scheduler::Record(int64_t job_id, JobEvent event,
                                           std::optional<Job::State> expected_state) {
  ASSIGN_OR_RETURN(JobEvent stored, store_->AppendEvent(job_id, std::move(event), expected_state));
  hub_->Publish(job_id, stored.seq());
  return stored;
}

absl::Status Scheduler::Transition(int64_t job_id, Job::State state, const std::string& reason,
                                   std::optional<Job::State> expected) {
  JobEvent event;
  event.mutable_state_change()->set_state(state);
  event.mutable_state_change()->set_reason(reason);
  return Record(job_id, std::move(event), expected).status();
}

absl::Status Scheduler::Start() {
  // A job RUNNING in the store has no worker now: the previous daemon died or stopped.
  while (true) {
    ASSIGN_OR_RETURN(std::optional<Job> orphan, store_->OldestInState(Job::RUNNING));
    if (!orphan.has_value()) break;
    RETURN_IF_ERROR(Transition(orphan->id(), Job::QUEUED,
                               "re-queued: the daemon stopped while it was running"));
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void Scheduler::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

void Scheduler::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) {
      if (!thread_.joinable()) return;
    }
    shutting_down_ = true;
    if (running_worker_ != nullptr) {
      running_worker_->Terminate();
      kill_deadline_ = std::min(kill_deadline_, absl::Now() + options_.cancel_grace);
    }
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<Job> Scheduler::Cancel(int64_t job_id) {
  ASSIGN_OR_RETURN(Job job, store_->GetJob(job_id));
  {
    absl::MutexLock lock(&mu_);
    if (running_job_ == job_id) {
      if (!cancel_requested_) {
        cancel_requested_ = true;
        kill_deadline_ = absl::Now() + options_.cancel_grace;
        // No worker yet: RunJob stops it as soon as it starts.
        if (running_worker_ != nullptr) running_worker_->Terminate();
      }
      return store_->GetJob(job_id);
    }
    // Under mu_ the loop cannot start this job meanwhile: it claims jobs holding mu_.
    if (job.state() == Job::QUEUED) {
      RETURN_IF_ERROR(Transition(job_id, Job::CANCELLED, "cancelled while queued", Job::QUEUED));
      return store_->GetJob(job_id);
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is already ", Job::State_Name(job.state())));
}

void Scheduler::Loop() {
  while (true) {
    std::optional<Job> next;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](Scheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                 return s->wake_ || s->shutting_down_;
                               },
                               this),
                           absl::Seconds(5));
      if (shutting_down_) return;
      wake_ = false;
      absl::StatusOr<std::optional<Job>> oldest = store_->OldestInState(Job::QUEUED);
      if (!oldest.ok()) {
        std::cerr << "traind: scheduler: " << oldest.status() << "\n";
        continue;
      }
      if (!oldest->has_value()) continue;
      next = std::move(**oldest);
      absl::Status claimed = Transition(next->id(), Job::RUNNING, "", Job::QUEUED);
      if (!claimed.ok()) {
        std::cerr << "traind: cannot start job " << next->id() << ": " << claimed << "\n";
        continue;
      }
      running_job_ = next->id();
      cancel_requested_ = false;
      kill_deadline_ = absl::InfiniteFuture();
      wake_ = true;  // look for the next job as soon as this one ends
    }
    RunJob(*next);
  }
}

void Scheduler::RunJob(const Job& job) {
  trainer::v1::WorkerRequest request;
  request.set_job_id(job.id());
  *request.mutable_spec() = job.spec();
  const std::string job_dir = absl::StrCat(options_.jobs_dir, "/", job.id());
  std::error_code error;
  std::filesystem::create_directories(job_dir, error);
  if (error) {
    (void)Transition(job.id(), Job::FAILED,
                     absl::StrCat("cannot create ", job_dir, ": ", error.message()));
    absl::MutexLock lock(&mu_);
    running_job_ = 0;
    return;
  }
  request.set_job_dir(job_dir);
  absl::StatusOr<std::unique_ptr<WorkerProcess>> started =
      WorkerProcess::Start(options_.worker_path, request);
  if (!started.ok()) {
    (void)Transition(job.id(), Job::FAILED, std::string(started.status().message()));
    absl::MutexLock lock(&mu_);
    running_job_ = 0;
    return;
  }
  WorkerProcess& worker = **started;
  {
    absl::MutexLock lock(&mu_);
    running_worker_ = &worker;
    if (shutting_down_ || cancel_requested_) worker.Terminate();
  }

  bool got_final_result = false;
  std::string reported_error;
  while (true) {
    JobEvent event;
    const WorkerProcess::ReadResult read = worker.ReadEvent(&event, absl::Milliseconds(200));
    if (read == WorkerProcess::ReadResult::kEnd) break;
    if (read == WorkerProcess::ReadResult::kEvent) {
      // The daemon owns seq and state: a worker may not forge either.
      event.clear_seq();
      if (event.has_state_change()) continue;
      if (event.has_final_result() || event.has_bench()) got_final_result = true;
      if (event.has_log() && event.log().severity() == trainer::v1::LogLine::ERROR) {
        reported_error = event.log().text();
      }
      if (absl::Status s = Record(job.id(), std::move(event)).status(); !s.ok()) {
        std::cerr << "traind: job " << job.id() << ": cannot store event: " << s << "\n";
      }
    }
    absl::MutexLock lock(&mu_);
    if (absl::Now() >= kill_deadline_) worker.Kill();
  }
  const WorkerProcess::Exit exit = worker.Wait();

  bool cancelled, shutting_down;
  {
    absl::MutexLock lock(&mu_);
    running_worker_ = nullptr;
    running_job_ = 0;
    cancelled = cancel_requested_;
    shutting_down = shutting_down_;
  }
  absl::Status recorded;
  if (exit.exit_code == 0 && exit.signal == 0 && got_final_result) {
    recorded = Transition(job.id(), Job::SUCCEEDED, "");
  } else if (cancelled) {
    recorded = Transition(job.id(), Job::CANCELLED, "cancelled by request");
  } else if (shutting_down && (exit.exit_code == kWorkerCancelled || exit.signal != 0)) {
    recorded = Transition(job.id(), Job::QUEUED, "re-queued: the daemon is shutting down");
  } else if (exit.exit_code == kWorkerJobFailed && !reported_error.empty()) {
    recorded = Transition(job.id(), Job::FAILED, reported_error);
  } else {
    recorded = Transition(job.id(), Job::FAILED, exit.Describe());
  }
  if (!recorded.ok()) std::cerr << "traind: job " << job.id() << ": " << recorded << "\n";
}

}  // namespace traind
