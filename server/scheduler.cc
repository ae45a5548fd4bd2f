#include "server/scheduler.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/durable_file.h"
#include "common/free_port.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/program_pid_file.h"
#include "common/random_secret.h"
#include "common/script_spec.h"
#include "common/status_macros.h"
#include "common/time_limit.h"
#include "server/job_fold.h"
#include "server/job_outcome.h"
#include "supervise/rank_events.h"
#include "supervise/torchrun.h"
#include "supervise/worker_exit.h"

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
  std::vector<std::unique_ptr<WorkerProcess>> warm;
  {
    absl::MutexLock lock(&mu_);
    running_.clear();
    warm.swap(warm_);
  }
  warm.clear();  // each is killed and reaped
}

std::vector<std::string> Scheduler::WorkerEnvironment() const {
  std::vector<std::string> environment;
  if (!options_.cache_dir.empty()) environment.push_back("TRAIND_CACHE_DIR=" + options_.cache_dir);
  // A CPU job shares the cores with the other jobs the CPU lane runs (engine/cpu_threads.h).
  const auto cpu = options_.slots.find("cpu");
  environment.push_back(
      absl::StrCat("TRAIND_CPU_SLOTS=", cpu == options_.slots.end() ? 1 : cpu->second));
  // Below the daemon, whose threads carry every job's events to its watchers (worker/priority.h).
  environment.push_back(absl::StrCat("TRAIND_WORKER_NICE=", options_.worker_nice));
  return environment;
}

void Scheduler::KeepWorkersWarm() {
  // One that died while waiting (killed from outside, out of memory) is replaced.
  warm_.erase(
      std::remove_if(warm_.begin(), warm_.end(),
                     [](const std::unique_ptr<WorkerProcess>& w) { return w->HasExited(); }),
      warm_.end());
  while (!shutting_down_ && static_cast<int>(warm_.size()) < options_.warm_workers) {
    // On a machine with GPUs the worker creates the first one's context while it waits: most
    // jobs there run on it (one on another GPU or the CPU leaves that context idle, holding
    // some of that GPU's memory).
    std::vector<std::string> environment = WorkerEnvironment();
    if (!options_.gpus.empty()) environment.push_back("TRAIND_PREPARE_DEVICE=" + options_.gpus[0]);
    absl::StatusOr<std::unique_ptr<WorkerProcess>> spawned =
        WorkerProcess::Spawn(options_.worker_path, environment);
    if (!spawned.ok()) {
      LogAt(LogPriority::kWarning)
          << "traind: cannot keep a worker warm: " << spawned.status() << "\n";
      return;  // jobs start their own and say why that fails
    }
    warm_.push_back(std::move(*spawned));
  }
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> Scheduler::StartWorker(
    const trainer::v1::WorkerRequest& request) {
  std::unique_ptr<WorkerProcess> warm;
  {
    absl::MutexLock lock(&mu_);
    if (!warm_.empty()) {
      warm = std::move(warm_.back());
      warm_.pop_back();
      wake_ = true;  // the loop starts its replacement
    }
  }
  if (warm != nullptr && !warm->HasExited() && warm->Send(request).ok()) return warm;
  warm.reset();
  return WorkerProcess::Start(options_.worker_path, request, WorkerEnvironment());
}

absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> Scheduler::StartRanks(
    const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  const int ranks = static_cast<int>(devices.size());
  // The spec names "cuda" for a job on GPUs the plan chose: each worker is told its own.
  auto on_device = [&](const std::string& device) {
    trainer::v1::WorkerRequest placed = request;
    placed.mutable_spec()->set_device(device);
    return placed;
  };
  if (IsSlurmJob(request.spec())) {
    // One launcher stands for every rank: it speaks a worker's protocol on its pipes, and Slurm
    // runs the ranks where it places them (slurm/launcher_main.cc).
    std::vector<std::string> environment;
    if (!options_.slurm_address.empty()) {
      environment.push_back("TRAIND_SLURM_ADDRESS=" + options_.slurm_address);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> launcher,
                     WorkerProcess::Start(options_.slurm_launcher_path, request, environment));
    workers.push_back(std::move(launcher));
    return workers;
  }
  if (!request.spec().hosts().empty()) {
    // One launcher stands for the job's ranks on every host: it reserves the peers' devices,
    // runs this host's ranks on `devices` and the others through the peers
    // (hosts/launcher_main.cc).
    // The ranks it starts here inherit its environment: what every worker gets, then its own.
    std::vector<std::string> environment = WorkerEnvironment();
    for (const std::string& variable : options_.hosts_environment) environment.push_back(variable);
    environment.push_back("TRAIND_HOST_DEVICES=" + absl::StrJoin(devices, ","));
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> launcher,
                     WorkerProcess::Start(options_.hosts_launcher_path, request, environment));
    workers.push_back(std::move(launcher));
    return workers;
  }
  // A user's program: traind-script in each worker's place. It loads no LibTorch, so none is
  // kept warm for it; every rank learns all the job's devices (its LOCAL_RANK indexes them).
  const bool script = IsScriptJob(request.spec());
  const std::string& worker_path = script ? options_.script_runner_path : options_.worker_path;
  std::vector<std::string> job_environment;
  if (script) job_environment.push_back("TRAIND_JOB_DEVICES=" + absl::StrJoin(devices, ","));
  if (ranks == 1 && script) {
    std::vector<std::string> environment = WorkerEnvironment();
    environment.insert(environment.end(), job_environment.begin(), job_environment.end());
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> runner,
                     WorkerProcess::Start(worker_path, on_device(devices[0]), environment));
    workers.push_back(std::move(runner));
    return workers;
  }
  if (ranks == 1) {
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker, StartWorker(on_device(devices[0])));
    workers.push_back(std::move(worker));
    return workers;
  }
  // torchrun's contract; rank 0 serves the rendezvous store on a free loopback port.
  ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> environment = TorchrunEnvironment({r, r, ranks, "127.0.0.1", port});
    for (std::string& variable : WorkerEnvironment()) environment.push_back(std::move(variable));
    environment.insert(environment.end(), job_environment.begin(), job_environment.end());
    absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
        WorkerProcess::Start(worker_path, on_device(devices[r]), environment);
    if (!worker.ok()) {
      return absl::Status(worker.status().code(),
                          absl::StrCat("rank ", r, ": ", worker.status().message()));
    }
    workers.push_back(*std::move(worker));  // on failure the started ones are killed and reaped
  }
  return workers;
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

// A built-in job's checkpoint, or what a program saved in TRAIND_CHECKPOINT_DIR (its runner,
// traind-script, killed: the program died with it and starts again where it saved).
static bool HasCheckpoint(const Job& job, const std::string& job_dir) {
  std::error_code error;
  return IsScriptJob(job.spec())
             ? !std::filesystem::is_empty(job_dir + "/checkpoints", error) && !error
             : access((job_dir + "/checkpoint.pt").c_str(), F_OK) == 0;
}

absl::Status Scheduler::WaitForHosts(const Job& job, const std::string& why, bool afresh) {
  const absl::Time now = absl::Now();
  absl::Duration waited;
  absl::Duration retry_in;
  {
    absl::MutexLock lock(&mu_);
    if (afresh) host_waits_.erase(job.id());
    auto it = host_waits_.try_emplace(job.id(), HostWait{now, now, absl::ZeroDuration()}).first;
    waited = now - it->second.since;
    // 2 s, then doubling to 30 s: a host back from a restart is found quickly, a host that
    // stays away is not asked every second for ten minutes.
    it->second.delay = std::clamp(it->second.delay * 2, absl::Seconds(2), absl::Seconds(30));
    retry_in = it->second.delay;
    if (waited < options_.host_wait) it->second.retry_at = now + retry_in;
  }
  if (waited >= options_.host_wait) {
    {
      absl::MutexLock lock(&mu_);
      host_waits_.erase(job.id());
    }
    return Transition(job.id(), Job::FAILED,
                      absl::StrCat(why, " (gave up after waiting ",
                                   absl::FormatDuration(absl::Trunc(waited, absl::Seconds(1))),
                                   " for the hosts)"));
  }
  return Transition(job.id(), Job::QUEUED,
                    absl::StrCat(why, "; trying again in ",
                                 absl::FormatDuration(absl::Trunc(retry_in, absl::Seconds(1))),
                                 ", from the last checkpoint (gives up ",
                                 absl::FormatDuration(options_.host_wait - waited), " from now)"));
}

absl::StatusOr<Scheduler::PeerReservation> Scheduler::ReserveForPeer(
    const trainer::v1::JobSpec& spec, const std::string& what, absl::Duration lease) {
  Job job;
  *job.mutable_spec() = spec;
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return absl::UnavailableError("this traind is shutting down");
  if (paused_) return absl::ResourceExhaustedError("this traind's queue is paused");
  RETURN_IF_ERROR(plan_.Feasible(job));
  ExpireReservations();
  const std::vector<HeldDevices> holding = Holding();
  std::optional<std::vector<std::string>> devices = plan_.Place(job, holding, {});
  if (!devices) {
    return absl::ResourceExhaustedError(
        absl::StrCat("busy: no free ", spec.device(), " for ", RanksPerHost(spec), " rank(s) (",
                     holding.size() - reservations_.size(), " job(s) running, ",
                     reservations_.size(), " reservation(s) for other hosts)"));
  }
  PeerReservation reservation{RandomSecret().substr(0, 16), *devices};
  reservations_[reservation.id] = Reserved{*std::move(devices), absl::Now() + lease, false, what};
  LogAt(LogPriority::kInfo) << "traind: holding " << absl::StrJoin(reservation.devices, ", ")
                            << " for " << what << "\n";
  return reservation;
}

absl::StatusOr<std::vector<std::string>> Scheduler::ClaimReservation(const std::string& id) {
  absl::MutexLock lock(&mu_);
  ExpireReservations();
  auto it = reservations_.find(id);
  if (it == reservations_.end() || it->second.claimed) {
    return absl::NotFoundError("reservation_id: no such reservation (its lease ran out?)");
  }
  it->second.claimed = true;
  return it->second.devices;
}

void Scheduler::RenewReservation(const std::string& id, absl::Duration lease) {
  absl::MutexLock lock(&mu_);
  auto it = reservations_.find(id);
  if (it != reservations_.end() && !it->second.claimed) it->second.expires = absl::Now() + lease;
}

void Scheduler::ReleaseReservation(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = reservations_.find(id);
  if (it == reservations_.end()) return;
  LogAt(LogPriority::kInfo) << "traind: released " << absl::StrJoin(it->second.devices, ", ")
                            << " held for " << it->second.what << "\n";
  reservations_.erase(it);
  wake_ = true;
}

void Scheduler::ExpireReservations() {
  const absl::Time now = absl::Now();
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (!it->second.claimed && it->second.expires < now) {
      LogAt(LogPriority::kInfo) << "traind: released " << absl::StrJoin(it->second.devices, ", ")
                                << " held for " << it->second.what
                                << ": not claimed within its lease\n";
      it = reservations_.erase(it);
      wake_ = true;
    } else {
      ++it;
    }
  }
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
    if (job.state() == Job::QUEUED) return CancelQueuedLocked(job_id);
  }
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is already ", Job::State_Name(job.state())));
}

absl::StatusOr<Job> Scheduler::CancelQueuedLocked(int64_t job_id) {
  RETURN_IF_ERROR(Transition(job_id, Job::CANCELLED, "cancelled while queued", Job::QUEUED));
  host_waits_.erase(job_id);  // if it was waiting for its hosts
  wake_ = true;               // jobs waiting for this one must hear of it
  return store_->GetJob(job_id);
}

absl::StatusOr<Job> Scheduler::CancelEndedOrRequeuedLocked(int64_t job_id) {
  ASSIGN_OR_RETURN(Job now, store_->GetJob(job_id));
  if (now.state() == Job::QUEUED) return CancelQueuedLocked(job_id);
  // Never "cancelled" for a job that succeeded: the caller learns it ended first.
  return absl::FailedPreconditionError(
      absl::StrCat("job ", job_id, " is already ", Job::State_Name(now.state())));
}

std::vector<HeldDevices> Scheduler::Holding() const {
  std::vector<HeldDevices> holding;
  for (const auto& [id, running] : running_) {
    if (!running->done) holding.push_back(HeldBy(*running));
  }
  // Last, so the count of running jobs is holding.size() - reservations_.size().
  for (const auto& [id, reserved] : reservations_) {
    holding.push_back(HeldDevices{reserved.devices, /*whole=*/true});
  }
  return holding;
}

HeldDevices Scheduler::HeldBy(const Running& running) {
  if (IsSlurmJob(running.job.spec())) return HeldDevices{running.devices, false, false, true};
  return HeldDevices{running.devices, RankCount(running.job.spec()) > 1, running.job.exclusive()};
}

std::vector<Job> Scheduler::Startable(std::vector<Job> queued) {
  // Dependencies: wait for success; inherit failure. A state read once per pass, however many
  // queued jobs name the same dependency (a sweep run after one job).
  std::map<int64_t, absl::StatusOr<Job::State>> states;
  auto state_of = [&](int64_t id) -> const absl::StatusOr<Job::State>& {
    auto it = states.find(id);
    if (it == states.end()) {
      absl::StatusOr<Job> dependency = store_->GetJob(id);
      it = states
               .emplace(id, dependency.ok() ? absl::StatusOr<Job::State>(dependency->state())
                                            : absl::StatusOr<Job::State>(dependency.status()))
               .first;
    }
    return it->second;
  };
  std::vector<Job> startable;
  bool ended_some = false;
  for (Job& job : queued) {
    bool ready = true;
    std::string broken;
    for (int64_t after : job.after()) {
      const absl::StatusOr<Job::State>& state = state_of(after);
      if (!state.ok()) {
        broken = absl::StrCat("dependency ", after, ": ", state.status().message());
        break;
      }
      if (*state == Job::FAILED || *state == Job::CANCELLED) {
        broken = absl::StrCat("dependency ", after, " ended ", Job::State_Name(*state));
        break;
      }
      if (*state != Job::SUCCEEDED) ready = false;
    }
    if (!broken.empty()) {
      ended_some |= Transition(job.id(), Job::CANCELLED, broken, Job::QUEUED).ok();
      continue;
    }
    if (!ready) continue;
    absl::Status feasible = plan_.Feasible(job);
    if (feasible.ok() && options_.may_start) feasible = options_.may_start(job);
    if (!feasible.ok()) {
      ended_some |=
          Transition(job.id(), Job::FAILED, std::string(feasible.message()), Job::QUEUED).ok();
      continue;
    }
    startable.push_back(std::move(job));
  }
  if (ended_some) Wake();  // their dependents are next
  return startable;
}

namespace {

// Jobs that DevicePlan::Place treats alike: where they run, on how many ranks, alone or not.
std::string PlacementClass(const Job& job) {
  const trainer::v1::JobSpec& spec = job.spec();
  return absl::StrCat(spec.backend(), "|", spec.device(), "|", spec.devices(), "|", RankCount(spec),
                      "|", job.exclusive());
}

}  // namespace

void Scheduler::StartEligible(const std::vector<Job>& startable) {
  std::set<std::string> held;  // devices kept for a data-parallel job ahead in the queue
  // What runs, gathered once per pass; a job started below is added as it starts.
  std::vector<HeldDevices> holding = Holding();
  const absl::Time now = absl::Now();
  // Within a pass devices only fill up (`holding` and `held` only grow), so a job like one that
  // could not be placed cannot be placed either: with 10,000 queued jobs of a few kinds the pass
  // tries each kind once instead of each job.
  std::set<std::string> cannot_place;
  for (const Job& job : startable) {
    if (running_.count(job.id())) continue;  // started meanwhile (a stale read of the queue)
    if (auto wait = host_waits_.find(job.id());
        wait != host_waits_.end() && wait->second.retry_at > now) {
      continue;  // waiting for a host (WaitForHosts); the loop looks again every 2 s
    }
    const std::string kind = PlacementClass(job);
    if (cannot_place.count(kind)) continue;
    std::optional<std::vector<std::string>> devices = plan_.Place(job, holding, held);
    if (!devices) {
      // The exclusive job next in line holds everything behind it, or it would starve; a
      // data-parallel job holds its devices.
      if (job.exclusive()) return;
      const std::set<std::string> hold = plan_.Hold(job);
      held.insert(hold.begin(), hold.end());
      cannot_place.insert(kind);
      continue;
    }
    if (absl::Status claimed = Transition(job.id(), Job::RUNNING, "", Job::QUEUED); !claimed.ok()) {
      // FAILED_PRECONDITION: cancelled, or re-prioritised, since the queue was read.
      if (claimed.code() != absl::StatusCode::kFailedPrecondition) {
        LogAt(LogPriority::kError)
            << "traind: cannot start job " << job.id() << ": " << claimed << "\n";
      }
      continue;
    }
    auto running = std::make_unique<Running>();
    running->job = job;
    running->devices = *std::move(devices);
    holding.push_back(HeldBy(*running));
    Running* r = running.get();
    running_[job.id()] = std::move(running);
    r->thread = std::thread([this, r] { Supervise(r); });
    if (job.exclusive()) return;
  }
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
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    if (!paused_) StartEligible(startable);
    KeepWorkersWarm();
  }
}

absl::StatusOr<trainer::v1::WorkerRequest> Scheduler::RequestFor(const Job& job) const {
  trainer::v1::WorkerRequest request;
  request.set_job_id(job.id());
  *request.mutable_spec() = job.spec();
  const std::string job_dir = absl::StrCat(options_.jobs_dir, "/", job.id());
  std::error_code error;
  std::filesystem::create_directories(job_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", job_dir, ": ", error.message()));
  }
  // No run of this job is under way: a temporary file here is a killed run's half-written one.
  RemoveStaleTemporaries(job_dir);
  request.set_job_dir(job_dir);
  if (options_.blobs != nullptr && !job.spec().model_file().empty()) {
    request.set_model_path(options_.blobs->PathOf(job.spec().model_file()));
  }
  if (absl::StatusOr<InitFrom> init = ParseInitFrom(job.spec().init_from());
      !job.spec().init_from().empty() && init.ok()) {
    request.set_init_path(
        !init->digest.empty() && options_.blobs != nullptr
            ? options_.blobs->PathOf(init->digest)
            : absl::StrCat(options_.jobs_dir, "/", init->job_id, "/", init->artifact, ".pt"));
  }
  if (absl::StartsWith(job.spec().data_file(), "sha256:") && options_.blobs != nullptr) {
    request.set_data_path(options_.blobs->PathOf(job.spec().data_file()));
  } else {
    request.set_data_path(job.spec().data_file());  // resolved under a data root at submit
  }
  if (IsScriptJob(job.spec())) {
    const trainer::v1::ScriptSpec& script = job.spec().script();
    const auto interpreter = options_.interpreters.find(
        script.interpreter().empty() ? kDefaultInterpreter : script.interpreter());
    // One allowed at submit may be gone since (traind restarted without it): the runner says so.
    if (interpreter != options_.interpreters.end()) {
      request.set_interpreter_path(interpreter->second);
    }
    for (const trainer::v1::ScriptFile& file : script.files()) {
      trainer::v1::ScriptSource* source = request.add_script_sources();
      source->set_path(file.path());
      if (options_.blobs != nullptr) source->set_source(options_.blobs->PathOf(file.digest()));
      source->set_executable(file.executable());
    }
    request.mutable_program_limits()->set_memory_bytes(options_.script_memory_bytes);
    request.mutable_program_limits()->set_file_size_bytes(options_.script_file_size_bytes);
    if (!options_.script_sandbox.bwrap_path().empty()) {
      *request.mutable_sandbox() = options_.script_sandbox;
    }
  }
  // Checked again where the worker opens them: a path may have changed since submit.
  for (const std::string& root : options_.worker_data_roots) request.add_data_roots(root);
  request.set_checkpoint_interval_seconds(options_.checkpoint_interval_seconds);
  request.set_exclusive(job.exclusive());
  return request;
}

void Scheduler::Supervise(Running* running) {
  const Job& job = running->job;
  auto finish = [&] {
    absl::MutexLock lock(&mu_);
    running->workers.clear();
    running->done = true;
    wake_ = true;
  };
  absl::StatusOr<trainer::v1::WorkerRequest> request = RequestFor(job);
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> started =
      request.ok() ? StartRanks(*request, running->devices) : request.status();
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
}

}  // namespace traind
