// DevicePlan: which devices a queued job would run on if it started now, given what runs.
//
// Devices are "cpu", "mps" and "cuda:N". A one-process job takes a share of its device (--slots
// DEVICE=N jobs at once, default 1; "cuda" slots apply to every GPU not named itself). A
// data-parallel job takes its devices whole, all at once or none (gang scheduling): CPU ranks the
// whole CPU, GPU ranks one GPU each, never shared while it runs. Since nothing is reserved
// piecemeal, two multi-device jobs cannot deadlock each other; `Hold` keeps later one-device
// jobs off the GPUs a waiting multi-GPU job needs, so a stream of small jobs cannot starve it.
// An exclusive job runs alone. A Slurm job runs on the cluster's nodes, where Slurm places it: it
// takes nothing here and waits only for a "slurm" slot (how many such jobs traind follows at
// once). Pure logic, no locking: the scheduler calls it
// under its mutex.
#ifndef TRAIND_SERVER_DEVICE_PLAN_H_
#define TRAIND_SERVER_DEVICE_PLAN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// What a running job holds.
struct HeldDevices {
  std::vector<std::string> devices;  // one per rank
  bool whole = false;                // a data-parallel job: nothing else on these devices
  bool exclusive = false;
  bool remote = false;   // a Slurm job: holds nothing of this machine's
  int64_t sweep_id = 0;  // its sweep's: a search's trials may share a GPU (PackWidths)
};

// How many trials of a search (by sweep id) may share one GPU or the CPU lane
// (server/trial_packing.h); a search not named, or 1: a trial takes a slot like any job.
using PackWidths = std::map<int64_t, int>;

// INVALID_ARGUMENT naming gpus or devices when `spec` asks for GPUs this machine (`gpus`:
// "cuda:0", ...) does not have: "gpus: 4 requested, this machine has 2 (cuda:0, cuda:1)". Submit
// refuses with it; DevicePlan::Feasible fails a job queued before a restart that lost a GPU.
absl::Status CheckGpusExist(const trainer::v1::JobSpec& spec, const std::vector<std::string>& gpus);

class DevicePlan {
 public:
  // Jobs on Slurm at once, unless `--slots slurm=N` says otherwise.
  static constexpr int kDefaultSlurmJobs = 64;

  // `gpus`: this machine's CUDA devices ("cuda:0", ...), in order.
  DevicePlan(std::vector<std::string> gpus, std::map<std::string, int> slots);

  // One device per rank of `job` (RankCount), or nullopt when it must wait. `held`: devices
  // kept free for jobs ahead of it in the queue (see Hold). A search's trial whose search has a
  // pack width over 1 may also go to a GPU whose slots are taken, if only that search's trials
  // run there and fewer than its width.
  std::optional<std::vector<std::string>> Place(const trainer::v1::Job& job,
                                                const std::vector<HeldDevices>& running,
                                                const std::set<std::string>& held,
                                                const PackWidths& packs = {}) const;
  // The devices a job that could not start keeps later jobs off: a data-parallel job's.
  std::set<std::string> Hold(const trainer::v1::Job& job) const;
  // FAILED_PRECONDITION when `job` can never start here: more GPUs than the machine has, or a
  // listed one it lacks (a job queued before a restart that lost a GPU). Submit refuses such
  // jobs; this catches those already queued.
  absl::Status Feasible(const trainer::v1::Job& job) const;

  int SlotsOf(const std::string& device) const;
  // How many jobs like `spec` run here at once: its device's slots (every GPU's, for a job on any
  // one GPU); 1 for a job that takes its devices whole or runs elsewhere.
  int Lanes(const trainer::v1::JobSpec& spec) const;

 private:
  const std::vector<std::string> gpus_;
  const std::map<std::string, int> slots_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_DEVICE_PLAN_H_
