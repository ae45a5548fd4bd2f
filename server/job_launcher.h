// JobLauncher: starts a job's processes on this machine once the scheduler has placed it; the
// scheduler holds one and tests give it a fake (server/scheduler_test.cc). ProcessLauncher is
// traind's: it keeps `warm_workers` traind-worker processes started and waiting (a job of one
// built-in rank takes one and skips LibTorch's second of start-up), and otherwise starts the
// program supervise/rank_launch.h says runs the job. A search's built-in trials packed on one GPU
// start with packed_gpu_environment's variables (traind's MPS daemon, server/mps_control.h), in
// workers of their own: other jobs never connect to it.
// Thread-safe: Launch may be called from any job's supervising thread; KeepWarm only from one
// thread that outlives the workers it spawns (a worker's parent-death signal follows the thread
// that spawned it: the scheduler's loop).
#ifndef TRAIND_SERVER_JOB_LAUNCHER_H_
#define TRAIND_SERVER_JOB_LAUNCHER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "supervise/rank_launch.h"
#include "supervise/worker_forker.h"
#include "supervise/worker_process.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

class JobLauncher {
 public:
  virtual ~JobLauncher() = default;
  // The job's processes: one per rank on `devices` (one device per rank, DevicePlan's choice),
  // or one that stands for every rank (a Slurm job, a job on several hosts).
  virtual absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> Launch(
      const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) = 0;
  // Starts waiting workers up to the pool's size, or up to `at_least` when that is more (the
  // widest packed search's trials per device: they start together), replacing any that died;
  // stops those beyond it (a packed search ended). `gpu_trials`: a search packs on a GPU, so
  // those beyond the pool's own start as its trials do (ProcessLauncher's
  // packed_gpu_environment).
  virtual void KeepWarm(int at_least, bool gpu_trials) {
    (void)at_least;
    (void)gpu_trials;
  }
  // Kills and reaps the waiting workers; none are started after.
  virtual void DropWarm() {}
  // A worker whose job on `device` ended well and that waits for another (WorkerProcess::idle:
  // Launch asked it to serve another), once its job is over; the default stops it.
  virtual void TakeBack(std::unique_ptr<WorkerProcess> idle, const std::string& device) {
    (void)idle;
    (void)device;
  }
};

// What every worker this traind starts gets in its environment besides traind's own: local
// jobs' ranks, the ranks traind-hosts starts here (they inherit its environment) and PeerService's.
//   cache_dir: decompressed copies of datasets, shared by the workers (TRAIND_CACHE_DIR); "": none
//   cpu_slots: jobs the CPU lane runs at once, whose threads share the cores (TRAIND_CPU_SLOTS)
//   nice: how far below traind's own priority workers run (TRAIND_WORKER_NICE, worker/priority.h)
std::vector<std::string> WorkerEnvironment(const std::string& cache_dir, int cpu_slots, int nice);

class ProcessLauncher final : public JobLauncher {
 public:
  struct Options {
    JobPrograms programs;
    std::vector<std::string> worker_environment;  // WorkerEnvironment(...)
    int warm_workers = 1;                         // kept started ahead of need; 0: none
    // A GPU whose CUDA context the first warm_workers waiting workers create ahead ("cuda:0");
    // "": none. Those kept for a packed search create none: what its trials measured alone
    // did not count their contexts' memory.
    std::string prepare_device;
    // The host name a Slurm job's tasks reach this machine at (TRAIND_SLURM_ADDRESS; empty: this
    // machine's name).
    std::string slurm_address;
    // The peers a job on several hosts may reach (hosts/peer_config.h), for traind-hosts.
    std::vector<std::string> hosts_environment;
    // Called when a warm worker is taken, so that its replacement is started soon
    // (Scheduler::Wake).
    std::function<void()> on_warm_taken;
    // What a search's built-in trial packed on a GPU (WorkerRequest.cpu_sharers > 1) adds to its
    // environment (MpsControl::ClientEnvironment), asked when one starts or is kept warm for one.
    // Unset or empty: packed trials start as any worker does.
    std::function<std::vector<std::string>()> packed_gpu_environment;
    // Workers are forked from one traind-worker that has loaded LibTorch (supervise/
    // worker_forker.h), started with the first waiting ones: ready in milliseconds instead of a
    // program's 0.6-1 s and core-second of loading, which packed trials ending together cannot
    // wait for. Off (or until it has loaded, or after it failed): each starts as a program.
    bool fork_workers = true;
    // A packed GPU trial's worker that ended its trial well stays, its CUDA context made, and
    // takes one of the search's next trials on that GPU (WorkerRequest.serve_another): creating
    // the context through MPS took a packed trial 0.5-1 s, longer than its training. Off: each
    // trial's worker exits after it.
    bool reuse_packed_workers = true;
  };
  // How many trials one worker serves before it exits (a fresh one follows): what a trial leaves
  // behind in the process (the allocator's fragments, LibTorch's caches) stays bounded.
  static constexpr int kJobsPerReusedWorker = 50;
  explicit ProcessLauncher(Options options);
  ~ProcessLauncher() override;  // DropWarm

  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> Launch(
      const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices) override;
  void KeepWarm(int at_least, bool gpu_trials) override;
  void DropWarm() override;
  // Kept for the search's next packed trials on its GPU, up to KeepWarm's `at_least` of them on
  // each GPU.
  void TakeBack(std::unique_ptr<WorkerProcess> idle, const std::string& device) override;

  const std::vector<std::string>& worker_environment() const { return options_.worker_environment; }
  // How many workers wait now.
  int warm_count() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(warm_.size());
  }
  // Of those, how many created prepare_device's context ahead.
  int prepared_count() ABSL_LOCKS_EXCLUDED(mu_);
  // Of those, how many started with packed_gpu_environment.
  int sharing_count() ABSL_LOCKS_EXCLUDED(mu_);
  // Besides them, how many served a packed trial and wait for the next (TakeBack), on all GPUs.
  int served_count() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(served_.size());
  }
  // Their process ids, in the order they were started.
  std::vector<pid_t> waiting_pids() ABSL_LOCKS_EXCLUDED(mu_);
  const JobPrograms& programs() const { return options_.programs; }
  // Whether new workers are forked now (the fork server has loaded and not failed).
  bool forks_workers() ABSL_LOCKS_EXCLUDED(mu_);
  // The fork server's process id; 0: none (not started, failed, or dropped).
  pid_t fork_server_pid() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A started worker with `request` sent: a warm one that suits it when one is alive, else a new
  // one. `sharing`: the variables of a packed GPU trial (empty: none, or none to be had).
  absl::StatusOr<std::unique_ptr<WorkerProcess>> StartWorker(
      const trainer::v1::WorkerRequest& request, const std::vector<std::string>& sharing);
  // A new worker with `environment`, waiting for its request: forked when the fork server is
  // ready, else started as a program. A server that failed is given up, saying so once.
  absl::StatusOr<std::unique_ptr<WorkerProcess>> NewWorker(
      const std::vector<std::string>& environment) ABSL_LOCKS_EXCLUDED(mu_);
  // The fork server, started the first time waiting workers are wanted (from KeepWarm's thread,
  // which outlives the workers: WorkerForker).
  void StartForkServer(int pool) ABSL_LOCKS_EXCLUDED(mu_);
  // The one process that stands for every rank of a Slurm job or a job on several hosts.
  absl::StatusOr<std::unique_ptr<WorkerProcess>> StartJobLauncher(
      const trainer::v1::WorkerRequest& request, const std::vector<std::string>& devices);

  const Options options_;
  absl::Mutex mu_;
  bool dropped_ ABSL_GUARDED_BY(mu_) = false;
  struct Waiting {
    std::unique_ptr<WorkerProcess> process;
    bool prepared = false;  // it created prepare_device's context
    bool sharing = false;   // it started with packed_gpu_environment's variables
  };
  struct Served {  // a worker whose packed trial ended well, idle
    std::unique_ptr<WorkerProcess> process;
    std::string device;  // the GPU whose context it made
  };
  // Whether a waiting worker may run a job on `device`: on a GPU, only one started with the
  // packed trials' variables runs a packed trial, and only one without runs any other job; on
  // the CPU, any (none connects to the GPU).
  static bool Suits(const Waiting& waiting, const std::string& device, bool sharing);
  // The waiting worker a job on `device` takes, moved out of warm_ (null: none suits). Of those
  // that suit it, the longest waiting: the likeliest to have loaded LibTorch and, where it
  // prepares, the GPU's context. A job on a GPU prefers one that prepared its context; one on
  // the CPU one that did not (the pool's prepared workers are kept for the GPU's jobs).
  std::unique_ptr<WorkerProcess> TakeWaiting(const std::string& device, bool sharing)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A packed trial's: the longest waiting of served_ on `device` (null: none).
  std::unique_ptr<WorkerProcess> TakeServed(const std::string& device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `request`'s worker, which has served `jobs_served` trials, serves another after it:
  // a built-in trial packed on a GPU (`sharing`), not deterministic (cuBLAS reads
  // CUBLAS_WORKSPACE_CONFIG only when the context's first handle is made).
  bool ServesAnother(const trainer::v1::WorkerRequest& request, bool sharing,
                     int jobs_served) const;
  // A packed GPU trial's variables (packed_gpu_environment), where traind has a GPU; empty
  // otherwise. Both its trials and the workers kept waiting for them start with these.
  std::vector<std::string> PackedTrialEnvironment() const;
  // The waiting workers to keep now (at least `at_least`), of which how many prepared; the
  // surplus moved out (to stop outside the lock), unprepared ones first.
  struct PoolNeeds {
    int prepared = 0;
    int unprepared = 0;
  };
  PoolNeeds TrimPool(int at_least, std::vector<Waiting>* surplus)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps at most served_wanted_ of served_ on each GPU (the longest waiting), moving the others
  // and those that died out.
  void TrimServed(std::vector<Served>* surplus) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How many of served_ made their context on `device`.
  int ServedOn(const std::string& device) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static int CountPrepared(const std::vector<Waiting>& waiting);
  // The trial-sharing variables a request's worker starts with: empty unless it is a built-in
  // trial packed on a GPU (and traind has them).
  std::vector<std::string> SharingFor(const trainer::v1::WorkerRequest& request,
                                      const std::vector<std::string>& devices) const;

  std::vector<Waiting> warm_ ABSL_GUARDED_BY(mu_);
  // Workers that served a packed trial and wait for the next, beside the pool (TakeBack).
  std::vector<Served> served_ ABSL_GUARDED_BY(mu_);
  // Per GPU: KeepWarm's last `at_least` (the widest packed search's trials per device) when it
  // was for GPU trials, else 0.
  int served_wanted_ ABSL_GUARDED_BY(mu_) = 0;
  // Shared with a NewWorker in flight when DropWarm or a failure lets it go.
  std::shared_ptr<WorkerForker> forker_ ABSL_GUARDED_BY(mu_);
  bool forker_started_ ABSL_GUARDED_BY(mu_) = false;  // once: one that failed is not restarted
};

}  // namespace traind

#endif  // TRAIND_SERVER_JOB_LAUNCHER_H_
