#include "server/job_launcher.h"

#include <algorithm>

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

void ProcessLauncher::KeepWarm(int at_least) {
  const int pool = std::max(options_.warm_workers, at_least);
  int missing = 0;
  int have = 0;
  std::vector<std::unique_ptr<WorkerProcess>> surplus;  // killed and reaped outside the lock
  {
    absl::MutexLock lock(&mu_);
    // One that died while waiting (killed from outside, out of memory) is replaced.
    warm_.erase(
        std::remove_if(warm_.begin(), warm_.end(),
                       [](const std::unique_ptr<WorkerProcess>& w) { return w->HasExited(); }),
        warm_.end());
    if (dropped_) return;
    // The last started go first: those a packed search added, with no device prepared.
    while (static_cast<int>(warm_.size()) > pool) {
      surplus.push_back(std::move(warm_.back()));
      warm_.pop_back();
    }
    have = static_cast<int>(warm_.size());
    missing = pool - have;
  }
  surplus.clear();
  // On a machine with GPUs the worker creates the first one's context while it waits: most jobs
  // there run on it (one on another GPU or the CPU leaves that context idle, holding some of that
  // GPU's memory).
  std::vector<std::string> prepared = options_.worker_environment;
  if (!options_.prepare_device.empty()) {
    prepared.push_back("TRAIND_PREPARE_DEVICE=" + options_.prepare_device);
  }
  for (; missing > 0; --missing, ++have) {
    absl::StatusOr<std::unique_ptr<WorkerProcess>> spawned =
        WorkerProcess::Spawn(options_.programs.worker,
                             have < options_.warm_workers ? prepared : options_.worker_environment);
    if (!spawned.ok()) {
      LogAt(LogPriority::kWarning)
          << "traind: cannot keep a worker warm: " << spawned.status() << "\n";
      return;  // jobs start their own and say why that fails
    }
    absl::MutexLock lock(&mu_);
    if (dropped_) return;  // `spawned` is killed and reaped
    warm_.push_back(*std::move(spawned));
  }
}

void ProcessLauncher::DropWarm() {
  std::vector<std::unique_ptr<WorkerProcess>> warm;
  {
    absl::MutexLock lock(&mu_);
    dropped_ = true;
    warm.swap(warm_);
  }
  warm.clear();  // each is killed and reaped, outside the lock
}

absl::StatusOr<std::unique_ptr<WorkerProcess>> ProcessLauncher::StartWorker(
    const trainer::v1::WorkerRequest& request) {
  std::unique_ptr<WorkerProcess> warm;
  {
    absl::MutexLock lock(&mu_);
    if (!warm_.empty()) {
      warm = std::move(warm_.back());
      warm_.pop_back();
    }
  }
  if (warm != nullptr && options_.on_warm_taken) options_.on_warm_taken();
  if (warm != nullptr && !warm->HasExited() && warm->Send(request).ok()) return warm;
  warm.reset();
  return WorkerProcess::Start(options_.programs.worker, request, options_.worker_environment);
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
    ASSIGN_OR_RETURN(std::unique_ptr<WorkerProcess> worker, StartWorker(RankRequest(launch, 0)));
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
