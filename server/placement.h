// Placement: the scheduler's policy for which queued jobs start now and where, as functions of
// the queue and of what runs, so that it is tested without a process (server/placement_test.cc).
// The scheduler decides *when* to look (a job queued or ended, a setting changed); these decide
// *what* starts.
//   SortQueue: a job waits for the jobs in its `after` list to succeed, and is cancelled when one
//   fails or is cancelled; a job this machine can never run (or its owner may no longer start)
//   fails.
//   PlaceReady: in queue order (highest priority first, then oldest), each ready job starts on
//   the devices DevicePlan gives it. An exclusive job next in line that cannot start stops the
//   pass: nothing behind it starts until it can, so it cannot be starved; a data-parallel job that
//   cannot start holds its devices against later jobs, for the same reason.
// Pure, no locking: the scheduler calls PlaceReady under its mutex.
#ifndef TRAIND_SERVER_PLACEMENT_H_
#define TRAIND_SERVER_PLACEMENT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/device_plan.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct SortedQueue {
  std::vector<trainer::v1::Job> ready;  // in queue order: their dependencies have succeeded
  struct End {
    int64_t job_id = 0;
    trainer::v1::Job::State state = trainer::v1::Job::CANCELLED;
    std::string reason;  // "dependency 4 ended FAILED", the reason it cannot run
  };
  std::vector<End> to_end;  // jobs that can never start: end them (expected state QUEUED)
};

// `queued` in queue order. `state_of`: a dependency's state now (an error: it cannot be read, and
// the job is cancelled naming it); asked once per dependency, however many jobs name it.
// `may_run`: why a job can never start here (FAILED_PRECONDITION: a GPU it needs is gone;
// PERMISSION_DENIED: its owner may no longer start jobs); OK when it may.
SortedQueue SortQueue(
    std::vector<trainer::v1::Job> queued,
    const std::function<absl::StatusOr<trainer::v1::Job::State>(int64_t)>& state_of,
    const std::function<absl::Status(const trainer::v1::Job&)>& may_run);

// What a running job holds, for DevicePlan: its devices, and whether it holds them whole
// (data parallel), alone (exclusive) or none of this machine's (Slurm).
HeldDevices HeldBy(const trainer::v1::Job& job, const std::vector<std::string>& devices);

// One pass over `ready` (SortQueue's, in queue order) with `holding` running now.
//   skip(job): it is not to start in this pass (already running; waiting to retry its hosts).
//   start(job, devices): claims and starts it; false when it could not be claimed (cancelled
//   since the queue was read): the pass goes on without it.
// Returns how many started.
// `packs`: the searches whose trials share a GPU, and how many at once (DevicePlan::Place).
int PlaceReady(
    const DevicePlan& plan, const std::vector<trainer::v1::Job>& ready,
    std::vector<HeldDevices> holding, const std::function<bool(const trainer::v1::Job&)>& skip,
    const std::function<bool(const trainer::v1::Job&, const std::vector<std::string>&)>& start,
    const PackWidths& packs = {});

}  // namespace traind

#endif  // TRAIND_SERVER_PLACEMENT_H_
