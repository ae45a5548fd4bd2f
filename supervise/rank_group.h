// RankGroup: the ranks of one job that run on this machine, supervised together: the one pump and
// the one policy for a rank that dies, used wherever traind runs ranks (the scheduler's local
// ranks, PeerService's ranks for a coordinator elsewhere, traind-hosts' ranks on the coordinator,
// traind-slurm-task's one rank on a Slurm node).
// The policy: a rank that ends badly (killed by a signal, or any exit code but kWorkerSucceeded)
// takes the others down at once with SIGKILL: they would wait for it in their next collective.
// Except while the group is stopping (TerminateAll, SuspendAll, MarkStopping): then a rank that
// stops as asked (kWorkerStopped) leaves the others to stop in their own time, since rank 0 may be
// writing the checkpoint the job resumes from; the owner's deadline kills what outlives it.
// Owned and pumped by one thread; other threads may signal the WorkerProcesses directly
// (WorkerProcess's Terminate, Suspend and Kill are thread-safe).
#ifndef TRAIND_SUPERVISE_RANK_GROUP_H_
#define TRAIND_SUPERVISE_RANK_GROUP_H_

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "supervise/worker_process.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class RankGroup {
 public:
  static constexpr int kMaxBurst = 256;

  explicit RankGroup(std::vector<std::unique_ptr<WorkerProcess>> ranks);

  // What the pump tells its owner, rank by rank (local indexes, 0 .. size() - 1).
  struct Callbacks {
    std::function<void(int rank, trainer::v1::JobEvent event)> on_event;
    // Optional: the rank's events have ended and it is about to be reaped; `last`: every other
    // rank has been reaped. (The scheduler marks a job SUCCEEDED here: reaping a CUDA process
    // takes the kernel 0.1-0.2 s, which the job's caller need not wait for.)
    std::function<void(int rank, bool last)> on_events_ended;
    // Optional: the rank was reaped (after the policy above was applied).
    std::function<void(int rank, const WorkerProcess::Exit& exit)> on_exit;
    // Optional: the events that had arrived from the rank were all passed to on_event (one call
    // after each burst, before its on_events_ended): an owner that stores events in batches
    // commits here.
    std::function<void(int rank)> on_burst_end;
  };
  // One round: waits up to `wait` on the first rank still running, then looks at the others
  // without waiting, so that a rank's death is seen within the round; passes on what arrived (at
  // most kMaxBurst events a rank, so that one rank's flood does not starve the others), reaps the
  // ranks whose events ended and applies the policy above.
  void PumpRound(const Callbacks& callbacks, absl::Duration wait = absl::Milliseconds(200));

  // Signals every rank not yet reaped. TerminateAll and SuspendAll mark the group stopping.
  void TerminateAll();  // SIGTERM: stop
  void SuspendAll();    // SIGUSR1: checkpoint, then stop
  void KillAll();       // SIGKILL
  // The ranks were told to stop some other way (the scheduler signals them from another thread).
  void MarkStopping() { stopping_ = true; }

  int size() const { return static_cast<int>(ranks_.size()); }
  int alive() const { return alive_; }
  WorkerProcess& rank(int r) { return *ranks_[r]; }
  // How rank r ended, once reaped.
  const std::optional<WorkerProcess::Exit>& exit(int r) const { return exits_[r]; }
  // The first rank that ended badly, or -1.
  int failed_rank() const { return failed_rank_; }
  // Rank r's process when its job ended well and it waits for another (WorkerProcess::idle) and
  // no one signalled it; null otherwise. Moved out: call once the group's job is over.
  std::unique_ptr<WorkerProcess> TakeIdle(int r);

 private:
  void Reap(int r, const Callbacks& callbacks);

  std::vector<std::unique_ptr<WorkerProcess>> ranks_;
  std::vector<std::optional<WorkerProcess::Exit>> exits_;
  int alive_;
  int failed_rank_ = -1;
  bool stopping_ = false;
};

}  // namespace traind

#endif  // TRAIND_SUPERVISE_RANK_GROUP_H_
