#include "server/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/status_macros.h"
#include "server/placement.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobEvent;

namespace {
constexpr char kPausedSetting[] = "paused";
}  // namespace

Scheduler::Scheduler(Store* store, EventHub* hub, Options options)
    : store_(store),
      hub_(hub),
      options_(std::move(options)),
      plan_(options_.gpus, options_.slots) {}

Scheduler::~Scheduler() { Shutdown(); }

absl::StatusOr<JobEvent> Scheduler::Record(int64_t job_id, JobEvent event,
                                           std::optional<Job::State> expected_state) {
  return store_->AppendEvent(job_id, std::move(event), expected_state);  // tells the hub
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
    if (orphan->cancel_requested()) {
      RETURN_IF_ERROR(
          Transition(orphan->id(), Job::CANCELLED,
                     "cancelled by request (the daemon stopped before the worker did)"));
    } else {
      RETURN_IF_ERROR(Transition(orphan->id(), Job::QUEUED,
                                 "re-queued: the daemon stopped while it was running"));
    }
  }
  ASSIGN_OR_RETURN(std::string paused, store_->GetSetting(kPausedSetting));
  {
    absl::MutexLock lock(&mu_);
    paused_ = paused == "1";
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void Scheduler::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

absl::StatusOr<trainer::v1::QueueState> Scheduler::SetPaused(bool paused) {
  RETURN_IF_ERROR(store_->SetSetting(kPausedSetting, paused ? "1" : "0"));
  {
    absl::MutexLock lock(&mu_);
    paused_ = paused;
    wake_ = true;
  }
  return State();
}

absl::StatusOr<trainer::v1::QueueState> Scheduler::State() {
  ASSIGN_OR_RETURN(const int64_t queued, store_->CountQueued());
  trainer::v1::QueueState state;
  absl::MutexLock lock(&mu_);
  state.set_paused(paused_);
  int running = 0;
  for (const auto& [id, r] : running_) running += r->done ? 0 : 1;
  state.set_running(running);
  state.set_queued(static_cast<int32_t>(queued));
  return state;
}

void Scheduler::Shutdown() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (auto& [id, running] : running_) {
      // Checkpoint, then stop: the job is re-queued and resumes when traind starts again.
      for (WorkerProcess* worker : running->workers) worker->Suspend();
      running->kill_deadline =
          std::min(running->kill_deadline, absl::Now() + options_.cancel_grace);
    }
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, running] : running_) {
      if (running->thread.joinable()) threads.push_back(std::move(running->thread));
    }
  }
  for (std::thread& t : threads) t.join();
  {
    absl::MutexLock lock(&mu_);
    running_.clear();
  }
  options_.launcher->DropWarm();
}

std::map<std::string, std::vector<int64_t>> Scheduler::RunningJobsByDevice() {
  std::map<std::string, std::vector<int64_t>> jobs;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, running] : running_) {
    if (running->done) continue;
    for (const std::string& device : running->devices) {
      std::vector<int64_t>& on_device = jobs[device];
      if (on_device.empty() || on_device.back() != id) on_device.push_back(id);  // ranks: once
    }
  }
  return jobs;
}

absl::StatusOr<Job> Scheduler::Cancel(int64_t job_id) {
  ASSIGN_OR_RETURN(Job job, store_->GetJob(job_id));
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(job_id);
    if (it != running_.end() && !it->second->done) {
      Running& running = *it->second;
      if (!running.cancel_requested) {
        // Durable before the worker hears of it or the caller is answered: a daemon that dies
        // now still ends the job CANCELLED (Start) instead of running it again.
        JobEvent request;
        request.mutable_cancel_requested();
        absl::Status recorded = Record(job_id, std::move(request), Job::RUNNING).status();
        // FAILED_PRECONDITION: it ended just now (Supervise records the end before `done`), or
        // went back to the queue: answered as if the cancel had come a moment later.
        if (absl::IsFailedPrecondition(recorded)) return CancelEndedOrRequeuedLocked(job_id);
        RETURN_IF_ERROR(recorded);
        running.cancel_requested = true;
        running.kill_deadline = absl::Now() + options_.cancel_grace;
        // No worker yet: Supervise stops it as soon as it starts.
        for (WorkerProcess* worker : running.workers) worker->Terminate();
      }
      return store_->GetJob(job_id);
    }
    // Under mu_ the loop cannot start this job meanwhile: it claims jobs holding mu_.
    if (job.state() == Job::QUEUED || job.state() == Job::PAUSED) {
      return CancelQueuedLocked(job_id, job.state());
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is already ", Job::State_Name(job.state())));
}

absl::StatusOr<Job> Scheduler::CancelQueuedLocked(int64_t job_id, Job::State state) {
  RETURN_IF_ERROR(Transition(
      job_id, Job::CANCELLED,
      state == Job::PAUSED ? "cancelled while paused" : "cancelled while queued", state));
  host_waits_.erase(job_id);  // if it was waiting for its hosts
  wake_ = true;               // jobs waiting for this one must hear of it
  if (options_.on_job_ended) options_.on_job_ended();
  return store_->GetJob(job_id);
}

absl::StatusOr<Job> Scheduler::CancelEndedOrRequeuedLocked(int64_t job_id) {
  ASSIGN_OR_RETURN(Job now, store_->GetJob(job_id));
  if (now.state() == Job::QUEUED || now.state() == Job::PAUSED) {
    return CancelQueuedLocked(job_id, now.state());
  }
  // Never "cancelled" for a job that succeeded: the caller learns it ended first.
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is already ", Job::State_Name(now.state())));
}

int Scheduler::Lanes(const trainer::v1::JobSpec& spec) const { return plan_.Lanes(spec); }

void Scheduler::SetPackWidth(int64_t sweep_id, int width, PackedTrials trials) {
  bool grew = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = packs_.find(sweep_id);
    const int before = it == packs_.end() ? 1 : it->second;
    if (width <= 1) {
      if (it != packs_.end()) packs_.erase(it);
      packs_in_workers_.erase(sweep_id);
    } else {
      packs_[sweep_id] = width;
      if (trials == PackedTrials::kPrograms) {
        packs_in_workers_.erase(sweep_id);
      } else {
        packs_in_workers_[sweep_id] = trials == PackedTrials::kWorkersOnGpu;
      }
    }
    grew = width > before;
  }
  if (grew) Wake();
}

std::vector<HeldDevices> Scheduler::Holding() const {
  std::vector<HeldDevices> holding;
  for (const auto& [id, running] : running_) {
    if (!running->done) holding.push_back(HeldBy(running->job, running->devices));
  }
  // Last, so the count of running jobs is holding.size() - reservations_.size().
  for (const auto& [id, reserved] : reservations_) {
    holding.push_back(HeldDevices{reserved.devices, /*whole=*/true});
  }
  return holding;
}

std::vector<Job> Scheduler::Startable(std::vector<Job> queued) {
  SortedQueue sorted = SortQueue(
      std::move(queued),
      [this](int64_t id) -> absl::StatusOr<Job::State> {
        ASSIGN_OR_RETURN(Job dependency, store_->GetJob(id));
        return dependency.state();
      },
      [this](const Job& job) {
        absl::Status feasible = plan_.Feasible(job);
        if (feasible.ok() && options_.may_start) feasible = options_.may_start(job);
        return feasible;
      });
  bool ended_some = false;
  for (const SortedQueue::End& end : sorted.to_end) {
    ended_some |= Transition(end.job_id, end.state, end.reason, Job::QUEUED).ok();
  }
  if (ended_some) Wake();  // their dependents are next
  return std::move(sorted.ready);
}

void Scheduler::StartEligible(const std::vector<Job>& startable) {
  const absl::Time now = absl::Now();
  PlaceReady(
      plan_, startable, Holding(),
      [&](const Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (running_.count(job.id())) return true;  // started meanwhile (a stale read)
        // Waiting for a host (WaitForHosts); the loop looks again every 2 s.
        const auto wait = host_waits_.find(job.id());
        return wait != host_waits_.end() && wait->second.retry_at > now;
      },
      [&](const Job& job, const std::vector<std::string>& devices)
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Claim(job, devices); },
      packs_);
}

bool Scheduler::Claim(const Job& job, const std::vector<std::string>& devices) {
  if (absl::Status claimed = Transition(job.id(), Job::RUNNING, "", Job::QUEUED); !claimed.ok()) {
    // FAILED_PRECONDITION: cancelled, or re-prioritised, since the queue was read.
    if (claimed.code() != absl::StatusCode::kFailedPrecondition) {
      LogAt(LogPriority::kError) << "traind: cannot start job " << job.id() << ": " << claimed
                                 << "\n";
    }
    return false;
  }
  auto running = std::make_unique<Running>();
  running->job = job;
  running->devices = devices;
  if (const auto pack = packs_.find(job.sweep_id()); pack != packs_.end() && devices.size() == 1) {
    // Every lane of its device packs as many, and all of them share the host's cores.
    running->cpu_sharers = pack->second * plan_.Lanes(job.spec());
  }
  Running* r = running.get();
  running_[job.id()] = std::move(running);
  r->thread = std::thread([this, r] { Supervise(r); });
  return true;
}

void Scheduler::Loop() {
  while (true) {
    std::vector<std::thread> finished;
    bool paused;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](Scheduler* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
                                 return s->wake_ || s->shutting_down_;
                               },
                               this),
                           absl::Seconds(2));
      if (shutting_down_) return;
      wake_ = false;
      ExpireReservations();
      for (auto it = running_.begin(); it != running_.end();) {
        if (it->second->done) {
          finished.push_back(std::move(it->second->thread));
          it = running_.erase(it);
        } else {
          ++it;
        }
      }
      paused = paused_;
    }
    for (std::thread& t : finished) t.join();
    // Given back when the disk filled: taken again once there is room. Outside the lock: making
    // it writes up to 32 MiB where the file system cannot allocate without writing.
    if (options_.disk_reserve != nullptr && !options_.disk_reserve->held()) {
      options_.disk_reserve->Restore();
    }
    // The queue is read, and its dependencies resolved, without the scheduler's lock: with
    // thousands queued that takes tens of milliseconds that Cancel, SetPaused and a finishing
    // job's supervisor should not wait behind. Only placing and claiming hold it.
    std::vector<Job> startable;
    if (!paused) {
      absl::StatusOr<std::vector<Job>> queued = store_->QueuedJobs();
      if (queued.ok()) {
        startable = Startable(*std::move(queued));
      } else {
        LogAt(LogPriority::kError) << "traind: scheduler: " << queued.status() << "\n";
      }
    }
    int widest_pack = 0;  // a packed search's trials start together: as many workers kept warm
    bool gpu_pack = false;
    {
      absl::MutexLock lock(&mu_);
      if (shutting_down_) return;
      if (!paused_) StartEligible(startable);
      for (const auto& [sweep_id, on_gpu] : packs_in_workers_) {
        widest_pack = std::max(widest_pack, packs_[sweep_id]);
        gpu_pack = gpu_pack || on_gpu;
      }
    }
    // From this thread, which outlives the workers (their parent-death signal follows it); without
    // mu_: starting a process takes milliseconds that Cancel should not wait behind.
    options_.launcher->KeepWarm(widest_pack, gpu_pack);
  }
}

}  // namespace traind
