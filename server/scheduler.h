// Scheduler: decides which queued jobs run, each in its own traind-worker process, and records
// everything they report through the store (which assigns seq) and the hub.
//   Order: highest priority first, then oldest. A job waits for the jobs in its `after` list to
//   succeed (if one fails or is cancelled, so is it).
//   Lanes: each device runs up to `slots` jobs at once (default 1), so CPU and GPU jobs run side by
//   side. An exclusive job (benchmarks, sweep members) runs with nothing else on any device, and
//   when it is next in line nothing new starts until it can — it cannot be starved.
//   Paused (persisted): nothing new starts; running jobs finish.
//   Data parallel (spec.processes > 1): one worker per rank, all started together on a device
//   nothing else uses; a rank that dies takes the others down with it.
//   Crashes: a worker (or rank) killed by a signal restarts the job from its checkpoint, when it
//   has one (kMaxCrashRestarts times); without one the job fails.
//   Cancel: a queued job ends at once; a running one gets SIGTERM, then SIGKILL after
//   `cancel_grace`.
//   Rooms: which job starts next and where is server/placement.h's policy; how its processes
//   start (program, each rank's request and environment, warm workers) the launcher's
//   (server/job_launcher.h, supervise/rank_launch.h); what an ended run means
//   server/job_outcome.h's decision. The scheduler keeps the queue, reservations and the running
//   jobs, and stores what they report.
// Thread-safe. One loop thread plus one supervising thread per running job.
#ifndef TRAIND_SERVER_SCHEDULER_H_
#define TRAIND_SERVER_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/device_plan.h"
#include "server/disk_reserve.h"
#include "server/event_hub.h"
#include "server/job_launcher.h"
#include "server/store.h"
#include "server/trial_packing.h"
#include "server/worker_request.h"
#include "supervise/rank_events.h"
#include "supervise/rank_group.h"
#include "supervise/worker_process.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

class Scheduler {
 public:
  struct Options {
    // Starts a job's processes once it is placed (ProcessLauncher; a fake in tests). Not owned;
    // outlives the scheduler.
    JobLauncher* launcher = nullptr;
    // This host's side of every job's WorkerRequest; requests.jobs_dir: each job gets
    // <jobs_dir>/<id>/.
    WorkerRequestOptions requests;
    absl::Duration cancel_grace = absl::Seconds(10);  // SIGTERM -> SIGKILL
    std::map<std::string, int> slots;                 // per device; absent: 1
    std::vector<std::string> gpus;                    // this machine's: "cuda:0", ...
    // How long a job on several hosts (JobSpec.hosts) waits for a host that cannot take it
    // (busy, unreachable) before it fails.
    absl::Duration host_wait = absl::Minutes(10);
    // Whether a queued job may still start (its owner's grants as they are now:
    // AccessControl::MayStart); an error fails it with that message. Unset: every job may.
    std::function<absl::Status(const trainer::v1::Job&)> may_start;
    // Space kept for a job's end when the disk holding the store fills (server/disk_reserve.h);
    // null: none.
    DiskReserve* disk_reserve = nullptr;
    // Called when a job ended, paused or went back to the queue, or a waiting one was cancelled
    // (SearchDriver::Wake: a search's trial may have reported). Unset: nothing.
    std::function<void()> on_job_ended;
  };
  Scheduler(Store* store, EventHub* hub, Options options);
  ~Scheduler();  // calls Shutdown

  // Marks jobs left RUNNING by a previous daemon as QUEUED again, then starts the loop.
  absl::Status Start();
  // Something changed (a job was queued, a setting changed): look again.
  void Wake();
  // The job as it is after the request (CANCELLED at once for a queued or paused job; still
  // RUNNING, with the worker told to stop, for a running one). FAILED_PRECONDITION when already
  // finished.
  absl::StatusOr<trainer::v1::Job> Cancel(int64_t job_id);
  // Persists the paused flag; returns the queue's state.
  absl::StatusOr<trainer::v1::QueueState> SetPaused(bool paused);
  absl::StatusOr<trainer::v1::QueueState> State();
  // Stops starting jobs; running jobs' workers are stopped and the jobs re-queued, to run again
  // when the daemon next starts.
  void Shutdown();

  // How many jobs like `spec` run at once on this machine: its device's slots (every GPU's, for a
  // job on any one GPU); 1 for a job that takes its devices whole.
  int Lanes(const trainer::v1::JobSpec& spec) const;
  // How many trials of search `sweep_id` may share one GPU or the CPU lane from now on
  // (server/trial_packing.h); 1 (or less) forgets it. Trials run in traind-worker have as many
  // workers kept started and waiting (JobLauncher::KeepWarm). Wakes the loop when it grew.
  void SetPackWidth(int64_t sweep_id, int width, PackedTrials trials);

  // The jobs running now, by the device each rank of theirs holds ("cpu", "cuda:0").
  std::map<std::string, std::vector<int64_t>> RunningJobsByDevice();

  // Workers that died without reporting an error (a signal, an unexpected exit) since start, not
  // counting those stopped on request; for /metrics.
  int64_t worker_crashes() const { return worker_crashes_.load(std::memory_order_relaxed); }

  // This host's part of a job on several hosts that another traind coordinates (its --hosts):
  // phase one holds devices for `spec`'s ranks on one host (RanksPerHost) now, for `lease` unless
  // claimed; RESOURCE_EXHAUSTED when they are not free (busy, paused), FAILED_PRECONDITION when
  // this machine lacks them. `what` names it in traind's log. Phase two claims them: held until
  // released; NOT_FOUND once the lease ran out. See server/peer_service.h.
  struct PeerReservation {
    std::string id;
    std::vector<std::string> devices;
  };
  absl::StatusOr<PeerReservation> ReserveForPeer(const trainer::v1::JobSpec& spec,
                                                 const std::string& what, absl::Duration lease);
  absl::StatusOr<std::vector<std::string>> ClaimReservation(const std::string& id);
  // An unclaimed reservation's lease starts again (its checkpoint is on its way).
  void RenewReservation(const std::string& id, absl::Duration lease);
  void ReleaseReservation(const std::string& id);

  // Appends an event through the store and publishes it. Used by the service too.
  absl::StatusOr<trainer::v1::JobEvent> Record(
      int64_t job_id, trainer::v1::JobEvent event,
      std::optional<trainer::v1::Job::State> expected_state = std::nullopt);

 private:
  struct Running {
    trainer::v1::Job job;
    std::vector<std::string> devices;     // one per rank (DevicePlan)
    std::vector<WorkerProcess*> workers;  // set once started: one per rank
    // A search's trial packed with others of its search on its GPU or the CPU lane: how many
    // share the host's cores (WorkerRequest.cpu_sharers); 0 otherwise.
    int cpu_sharers = 0;
    bool cancel_requested = false;
    absl::Time kill_deadline = absl::InfiniteFuture();
    // Its time limit (JobSpec.time_limit, counted from this run's start; Slurm enforces a Slurm
    // job's own): then its ranks are stopped as a cancel's are, and the job fails saying so.
    absl::Time time_limit_at = absl::InfiniteFuture();
    bool timed_out = false;
    bool done = false;
    std::thread thread;
  };

  void Loop();
  // The queued jobs (in queue order) whose dependencies have succeeded and whose devices this
  // machine has; ends those whose dependency failed or that can never run here. Without mu_.
  std::vector<trainer::v1::Job> Startable(std::vector<trainer::v1::Job> queued)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Starts those of `startable` that have room now, in order (PlaceReady). Holds mu_.
  void StartEligible(const std::vector<trainer::v1::Job>& startable)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Claims `job` (QUEUED -> RUNNING) and starts its supervisor; false when it was cancelled or
  // re-prioritised since the queue was read.
  bool Claim(const trainer::v1::Job& job, const std::vector<std::string>& devices)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the running jobs hold, then what peers' reservations hold (whole devices).
  std::vector<HeldDevices> Holding() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Supervise(Running* running);
  // Supervise's steps.
  void LogStartedRanks(int64_t job_id, const std::vector<std::unique_ptr<WorkerProcess>>& workers,
                       const std::vector<std::string>& devices);
  // What a job's ranks reported, and the SUCCEEDED recorded as the last events ended (if it was).
  struct RanksEnded {
    RankEvents events;
    std::optional<absl::Status> succeeded_at_end_of_events;
  };
  // Stores the ranks' events until every rank has ended (RankGroup's policy kills the others
  // when one ends badly); kills all of them at running->kill_deadline. The events that arrived
  // together from a rank are stored in one transaction (a program's burst of lines: one fsync).
  RanksEnded PumpRanks(Running* running, RankGroup& ranks);
  // Stores and clears `burst`, the events kept from one rank.
  void StoreEvents(int64_t job_id, std::vector<trainer::v1::JobEvent>* burst);
  // The job's new state from how its ranks ended: succeeded, cancelled, re-queued (shutdown, a
  // crash with a checkpoint, hosts to wait for) or failed with the reason.
  void RecordOutcome(const trainer::v1::Job& job, const std::string& job_dir,
                     const RankGroup& ranks, const RanksEnded& ended, Running* running);
  // A job on several hosts whose launcher found a host unable to take it (or lost one): re-queued
  // to try again shortly (and resume from its checkpoint), until options_.host_wait has passed
  // since the first such attempt; then it fails with `why`.
  // `afresh`: the job ran since it last waited (a host lost mid-run): the wait starts again.
  absl::Status WaitForHosts(const trainer::v1::Job& job, const std::string& why, bool afresh);
  // Drops reservations whose lease ran out unclaimed.
  void ExpireReservations() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Transition to a job's end that a full disk cannot lose: gives back the disk reserve and
  // tries again, then every second until it is stored or traind stops.
  absl::Status EndDurably(int64_t job_id, trainer::v1::Job::State state, const std::string& reason)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Transition(int64_t job_id, trainer::v1::Job::State state, const std::string& reason,
                          std::optional<trainer::v1::Job::State> expected = std::nullopt);
  // Cancel's two ends: a queued job, and a running one whose end (or return to the queue) won
  // the race with the cancel's record.
  absl::StatusOr<trainer::v1::Job> CancelQueuedLocked(int64_t job_id, trainer::v1::Job::State state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<trainer::v1::Job> CancelEndedOrRequeuedLocked(int64_t job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  EventHub* const hub_;
  const Options options_;
  const DevicePlan plan_;
  std::thread thread_;

  absl::Mutex mu_;
  std::atomic<int64_t> worker_crashes_{0};
  bool wake_ ABSL_GUARDED_BY(mu_) = true;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, std::unique_ptr<Running>> running_ ABSL_GUARDED_BY(mu_);
  // Restarts after a kill, by job id (server/job_outcome.h: at most kMaxCrashRestarts).
  std::map<int64_t, int> crash_restarts_ ABSL_GUARDED_BY(mu_);
  struct Reserved {
    std::vector<std::string> devices;
    absl::Time expires;
    bool claimed = false;
    std::string what;
  };
  std::map<std::string, Reserved> reservations_ ABSL_GUARDED_BY(mu_);  // by id
  PackWidths packs_ ABSL_GUARDED_BY(mu_);
  // Of packs_, built-in jobs' searches: whether on a GPU.
  std::map<int64_t, bool> packs_in_workers_ ABSL_GUARDED_BY(mu_);
  struct HostWait {
    absl::Time since;      // the first attempt that found a host unable
    absl::Time retry_at;   // not started again before
    absl::Duration delay;  // the last wait: doubles each time
  };
  std::map<int64_t, HostWait> host_waits_ ABSL_GUARDED_BY(mu_);  // by job id
};

}  // namespace traind

#endif  // TRAIND_SERVER_SCHEDULER_H_
