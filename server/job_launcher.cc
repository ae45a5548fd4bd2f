#include "server/job_launcher.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/free_port.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/script_spec.h"
#include "common/status_macros.h"

namespace traind {

std::vector<std::string> WorkerEnvironment(const std::string& cache_dir, int cpu_slots, int nice) {
  std::vector<std::string> environment;
  if (!cache_dir.empty()) environment.push_back("TRAIND_CACHE_DIR=" + cache_dir);
  // A CPU job shares the cores with the other jobs the CPU lane runs (common/cpu_threads.h).
  environment.push_back(absl::StrCat("TRAIND_CPU_SLOTS=", cpu_slots));
  // Below the daemon, whose threads carry every job's events to its watchers (worker/priority.h).
  environment.push_back(absl::StrCat("TRAIND_WORKER_NICE=", nice));
  return environment;
}

ProcessLauncher::ProcessLauncher(Options options) : options_(std::move(options)) {}

ProcessLauncher::~ProcessLauncher() { DropWarm(); }

ProcessLauncher::PoolNeeds ProcessLauncher::TrimPool(int at_least, std::vector<Waiting>* surplus) {
  // One that died while waiting (killed from outside, out of memory) is replaced.
  warm_.erase(std::remove_if(warm_.begin(), warm_.end(),
                             [](const Waiting& w) { return w.process->HasExited(); }),
              warm_.end());
  const int pool = std::max(options_.warm_workers, at_least);
  // The pool's own workers create the GPU's context ahead; those kept for a packed search do not:
  // what its trials measured alone did not count their contexts' memory.
  const int prepared_wanted =
      options_.prepare_device.empty() ? 0 : std::min(options_.warm_workers, pool);
  const int prepared_missing = std::max(0, prepared_wanted - CountPrepared(warm_));
  // Unprepared ones go first (the last started first), making room for the prepared missing.
  for (auto it = warm_.end();
       it != warm_.begin() && static_cast<int>(warm_.size()) > pool - prepared_missing;) {
    --it;
    if (it->prepared) continue;
    surplus->push_back(std::move(*it));
    it = warm_.erase(it);
  }
  while (static_cast<int>(warm_.size()) > pool) {
    surplus->push_back(std::move(warm_.back()));
    warm_.pop_back();
  }
  const int missing = pool - static_cast<int>(warm_.size());
  const int prepared = std::min(missing, std::max(0, prepared_wanted - CountPrepared(warm_)));
  return {prepared, missing - prepared};
}

int ProcessLauncher::CountPrepared(const std::vector<Waiting>& waiting) {
  return static_cast<int>(
      std::count_if(waiting.begin(), waiting.end(), [](const Waiting& w) { return w.prepared; }));
}

int ProcessLauncher::prepared_count() {
  absl::MutexLock lock(&mu_);
  return CountPrepared(warm_);
}

int ProcessLauncher::sharing_count() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(
      std::count_if(warm_.begin(), warm_.end(), [](const Waiting& w) { return w.sharing; }));
}

std::vector<pid_t> ProcessLauncher::waiting_pids() {
  absl::MutexLock lock(&mu_);
  std::vector<pid_t> pids;
  for (const Waiting& waiting : warm_) pids.push_back(waiting.process->pid());
  return pids;
}

bool ProcessLauncher::Suits(const Waiting& waiting, const std::string& device, bool sharing) {
  return !IsCudaDevice(device) || waiting.sharing == sharing;
}

std::vector<std::string> ProcessLauncher::PackedTrialEnvironment() const {
  if (options_.prepare_device.empty() || !options_.packed_gpu_environment) return {};
  return options_.packed_gpu_environment();
}

std::vector<std::string> ProcessLauncher::SharingFor(
    const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) const {
  const bool packed_on_gpu =
      devices.size() == 1 && IsCudaDevice(devices[0]) && request.cpu_sharers() > 1;
  if (!packed_on_gpu || IsScriptJob(request.spec())) return {};
  return PackedTrialEnvironment();
}

namespace {

// A measurement's knob (bench/pack_trials_gpu.sh, part prefix deep-): TRAIND_PACKED_POOL_DEPTH=N
// keeps N times as many workers waiting for a packed search's trials (1 to 4; unset: 1), so each
// has about N trials' time to load before a trial takes it. Packed trials that end together take
// workers faster than their replacements load (docs/benchmarks-history.md, session 45).
int PackedPoolDepth() {
  const char* knob = std::getenv("TRAIND_PACKED_POOL_DEPTH");
  const int depth = knob == nullptr ? 1 : std::atoi(knob);
  return std::clamp(depth, 1, 4);
}

}  // namespace

int ProcessLauncher::ServedOn(const std::string& device) const {
  return static_cast<int>(std::count_if(served_.begin(), served_.end(),
                                        [&device](const Served& s) { return s.device == device; }));
}

void ProcessLauncher::TrimServed(std::vector<Served>* surplus) {
  // The longest waiting are kept, up to served_wanted_ on each GPU; one that died is let go.
  std::vector<Served> kept;
  std::map<std::string, int> kept_on;
  for (Served& served : served_) {
    const bool keep = !served.process->HasExited() && kept_on[served.device] < served_wanted_;
    if (keep) ++kept_on[served.device];
    (keep ? kept : *surplus).push_back(std::move(served));
  }
  served_.swap(kept);
}

namespace {

// Ends what was moved out of the pools (each is killed and reaped as it is destroyed): all killed
// first, so that their teardowns (0.1-0.2 s each for a CUDA process) overlap.
template <typename Entry>
void StopAll(std::vector<Entry>* stopped) {
  for (Entry& entry : *stopped) entry.process->Kill();
  stopped->clear();
}

}  // namespace

void ProcessLauncher::KeepWarm(int at_least, bool gpu_trials) {
  PoolNeeds needs;
  std::vector<Waiting> surplus;  // stopped outside the lock
  std::vector<Served> served_surplus;
  {
    absl::MutexLock lock(&mu_);
    if (dropped_) return;
    needs = TrimPool(at_least * PackedPoolDepth(), &surplus);
    served_wanted_ = gpu_trials ? at_least : 0;
    TrimServed(&served_surplus);
  }
  StopAll(&surplus);
  StopAll(&served_surplus);
  StartForkServer(needs.prepared + needs.unprepared);
  // On a machine with GPUs the pool's workers create the first one's context while they wait:
  // most jobs there run on it (one on another GPU or the CPU leaves that context idle, holding
  // some of that GPU's memory).
  std::vector<std::string> prepared = options_.worker_environment;
  if (!options_.prepare_device.empty()) {
    prepared.push_back("TRAIND_PREPARE_DEVICE=" + options_.prepare_device);
  }
  // Those beyond the pool's own are there for a packed search's trials; a CPU trial may take one
  // started for a GPU's (it never connects).
  const std::vector<std::string> sharing =
      needs.unprepared > 0 && gpu_trials ? PackedTrialEnvironment() : std::vector<std::string>{};
  std::vector<std::string> unprepared = options_.worker_environment;
  unprepared.insert(unprepared.end(), sharing.begin(), sharing.end());
  // A measurement's knob (bench/pack_trials_gpu.sh, part prefixes ctx- and step-): they create
  // the GPU's context, through MPS, while they wait ("context"), and rehearse a step ("step").
  // Off by default: with the rehearsal too, packed trials started slower while each took the
  // worker started last, often still preparing (docs/benchmarks-history.md, session 44), and
  // the packing rule does not count the waiting workers' contexts.
  const char* knob = std::getenv("TRAIND_PACKED_PREPARE");
  const std::string ahead = knob == nullptr || sharing.empty() ? "" : knob;
  if (ahead == "context" || ahead == "step") {
    unprepared.push_back("TRAIND_PREPARE_DEVICE=" + options_.prepare_device);
    if (ahead == "context") unprepared.push_back("TRAIND_REHEARSE=0");
  }
  for (int i = 0; i < needs.prepared + needs.unprepared; ++i) {
    const bool prepare = i < needs.prepared;
    absl::StatusOr<std::unique_ptr<WorkerProcess>> spawned =
        NewWorker(prepare ? prepared : unprepared);
    if (!spawned.ok()) {
      LogAt(LogPriority::kWarning)
          << "traind: cannot keep a worker warm: " << spawned.status() << "\n";
      return;  // jobs start their own and say why that fails
    }
    absl::MutexLock lock(&mu_);
    if (dropped_) return;  // `spawned` is killed and reaped
    warm_.push_back({*std::move(spawned), prepare, !prepare && !sharing.empty()});
  }
}

void ProcessLauncher::DropWarm() {
  std::vector<Waiting> warm;
  std::vector<Served> served;
  std::shared_ptr<WorkerForker> forker;
  {
    absl::MutexLock lock(&mu_);
    dropped_ = true;
    warm.swap(warm_);
    served.swap(served_);
    forker.swap(forker_);
  }
  StopAll(&warm);  // outside the lock
  StopAll(&served);
}

void ProcessLauncher::TakeBack(std::unique_ptr<WorkerProcess> idle, const std::string& device) {
  // Not one it asked to serve another, or no longer wanted: stopped (as `idle` is destroyed,
  // after the lock is let go).
  if (idle == nullptr || !idle->idle() || idle->HasExited()) return;
  absl::MutexLock lock(&mu_);
  if (dropped_ || ServedOn(device) >= served_wanted_) return;
  served_.push_back({std::move(idle), device});
}

void ProcessLauncher::StartForkServer(int pool) {
  if (!options_.fork_workers || pool == 0) return;
  absl::MutexLock lock(&mu_);
  if (forker_started_ || dropped_) return;
  forker_started_ = true;
  absl::StatusOr<std::unique_ptr<WorkerForker>> started =
      WorkerForker::Start(options_.programs.worker);
  if (!started.ok()) {
    LogAt(LogPriority::kWarning) << "traind: workers start as programs: " << started.status()
                                 << "\n";
    return;
  }
  forker_ = *std::move(started);
}

bool ProcessLauncher::forks_workers() {
  absl::MutexLock lock(&mu_);
  return forker_ != nullptr && forker_->Poll() == WorkerForker::State::kReady;
}

pid_t ProcessLauncher::fork_server_pid() {
  absl::MutexLock lock(&mu_);
  return forker_ == nullptr ? 0 : forker_->pid();
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> ProcessLauncher::NewWorker(
    const std::vector<std::string>& environment) {
  std::shared_ptr<WorkerForker> forker;
  {
    absl::MutexLock lock(&mu_);
    forker = forker_;
  }
  const WorkerForker::State state =
      forker == nullptr ? WorkerForker::State::kFailed : forker->Poll();
  if (state == WorkerForker::State::kLoading) {
    return WorkerProcess::Spawn(options_.programs.worker, environment);
  }
  absl::Status failure = absl::UnavailableError("the fork server exited");
  if (state == WorkerForker::State::kReady) {
    absl::StatusOr<std::unique_ptr<WorkerProcess>> forked =
        WorkerProcess::Fork(*forker, environment);
    if (forked.ok()) return forked;
    failure = forked.status();
  }
  // This one request failing (too few processes or file descriptors for a moment) is no reason
  // to stop forking: only a server that has failed for good is given up.
  if (forker != nullptr && forker->Poll() == WorkerForker::State::kFailed) {
    bool first = false;
    {
      absl::MutexLock lock(&mu_);
      first = forker_ == forker;
      if (first) forker_.reset();
    }
    if (first) {
      LogAt(LogPriority::kWarning)
          << "traind: workers start as programs from now on: " << failure << "\n";
    }
  }
  return WorkerProcess::Spawn(options_.programs.worker, environment);
}

std::unique_ptr<WorkerProcess> ProcessLauncher::TakeWaiting(const std::string& device,
                                                            bool sharing) {
  const bool wants_prepared = IsCudaDevice(device);
  auto taken = warm_.end();
  for (auto it = warm_.begin(); it != warm_.end(); ++it) {  // the longest waiting first
    if (!Suits(*it, device, sharing)) continue;
    if (taken == warm_.end()) taken = it;
    if (it->prepared == wants_prepared) {
      taken = it;
      break;
    }
  }
  if (taken == warm_.end()) return nullptr;
  std::unique_ptr<WorkerProcess> process = std::move(taken->process);
  warm_.erase(taken);
  return process;
}

std::unique_ptr<WorkerProcess> ProcessLauncher::TakeServed(const std::string& device) {
  for (auto it = served_.begin(); it != served_.end(); ++it) {
    // One that died while idle stays for TrimServed to reap, outside the lock.
    if (it->device != device || it->process->HasExited()) continue;
    std::unique_ptr<WorkerProcess> process = std::move(it->process);
    served_.erase(it);
    return process;
  }
  return nullptr;
}

bool ProcessLauncher::ServesAnother(const trainer::v1::WorkerRequest& request, bool sharing,
                                    int jobs_served) const {
  return options_.reuse_packed_workers && sharing && !request.spec().deterministic() &&
         jobs_served + 1 < kJobsPerReusedWorker;
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> ProcessLauncher::StartWorker(
    const trainer::v1::WorkerRequest& request, const std::vector<std::string>& sharing) {
  const std::string& device = request.spec().device();
  const bool packed = !sharing.empty();
  trainer::v1::WorkerRequest sent = request;
  // The readiest first: one that served a trial on this GPU (its context made), then a waiting
  // one; one that died meanwhile is passed over.
  for (const bool served : {true, false}) {
    std::unique_ptr<WorkerProcess> taken;
    {
      absl::MutexLock lock(&mu_);
      if (!served) {
        taken = TakeWaiting(device, packed);
      } else if (ServesAnother(request, packed, 0)) {
        taken = TakeServed(device);
      }
    }
    if (taken == nullptr) continue;
    if (!served && options_.on_warm_taken) options_.on_warm_taken();
    sent.set_serve_another(ServesAnother(request, packed, taken->jobs_served()));
    if (!taken->HasExited() && taken->Send(sent).ok()) return taken;
  }
  std::vector<std::string> environment = options_.worker_environment;
  environment.insert(environment.end(), sharing.begin(), sharing.end());
  absl::StatusOr<std::unique_ptr<WorkerProcess>> started = NewWorker(environment);
  // A worker started as a program here has its parent-death signal follow this thread, a job's
  // supervising one, which ends with the job: kept idle, it would be told to stop then. A forked
  // one's follows the thread that started the forker (KeepWarm's), as the waiting ones' do.
  sent.set_serve_another(ServesAnother(request, packed, 0) && started.ok() && (*started)->forked());
  return WorkerProcess::WithRequest(std::move(started), sent);
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> ProcessLauncher::StartJobLauncher(
    const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) {
  std::vector<std::string> environment;
  if (IsSlurmJob(request.spec())) {
    // It speaks a worker's protocol on its pipes; Slurm runs the ranks where it places them
    // (slurm/launcher_main.cc).
    if (!options_.slurm_address.empty()) {
      environment.push_back("TRAIND_SLURM_ADDRESS=" + options_.slurm_address);
    }
  } else {
    // It reserves the peers' devices, runs this host's ranks on `devices` and the others through
    // the peers (hosts/launcher_main.cc). The ranks it starts here inherit its environment: what
    // every worker gets, then its own.
    environment = options_.worker_environment;
    environment.insert(environment.end(), options_.hosts_environment.begin(),
                       options_.hosts_environment.end());
    environment.push_back("TRAIND_HOST_DEVICES=" + absl::StrJoin(devices, ","));
  }
  return WorkerProcess::Start(options_.programs.For(request.spec()), request, environment);
}

absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> ProcessLauncher::Launch(
    const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) {
  std::vector<std::unique_ptr<WorkerProcess>> processes;
  if (JobPrograms::OneForAllRanks(request.spec())) {
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> launcher, StartJobLauncher(request, devices));
    processes.push_back(std::move(launcher));
    return processes;
  }
  RankLaunch launch;
  launch.program = options_.programs.For(request.spec());
  launch.request = request;
  launch.devices = devices;
  launch.world_size = static_cast<int>(devices.size());
  launch.environment = options_.worker_environment;
  // A program loads no LibTorch, so none is kept warm for it.
  if (devices.size() == 1 && !IsScriptJob(request.spec())) {
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker,
                     StartWorker(RankRequest(launch, 0), SharingFor(request, devices)));
    processes.push_back(std::move(worker));
    return processes;
  }
  // torchrun's contract; rank 0 serves the rendezvous store on a free loopback port.
  if (launch.world_size > 1) {
    ASSIGN_OR_RETURN(launch.master_port, FreeLoopbackPort());
  }
  return StartRanks(launch);
}

}  // namespace traind
