#include "server/placement.h"

#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"

namespace traind {

using trainer::v1::Job;

namespace {

// Why `job` can never start because of its dependencies ("" when it may yet), and whether they
// have all succeeded.
struct Dependencies {
  bool succeeded = true;
  std::string broken;
};

Dependencies CheckDependencies(
    const Job& job, const std::function<const absl::StatusOr<Job::State>&(int64_t)>& state_of) {
  Dependencies dependencies;
  for (int64_t after : job.after()) {
    const absl::StatusOr<Job::State>& state = state_of(after);
    if (!state.ok()) {
      dependencies.broken = absl::StrCat("dependency ", after, ": ", state.status().message());
      return dependencies;
    }
    if (*state == Job::FAILED || *state == Job::CANCELLED) {
      dependencies.broken = absl::StrCat("dependency ", after, " ended ", Job::State_Name(*state));
      return dependencies;
    }
    if (*state != Job::SUCCEEDED) dependencies.succeeded = false;
  }
  return dependencies;
}

// Jobs that DevicePlan::Place treats alike: where they run, on how many ranks, alone or not.
std::string PlacementClass(const Job& job, const PackWidths& packs) {
  const trainer::v1::JobSpec& spec = job.spec();
  // A packed search's trials have room where other jobs have none: a class of their own.
  const int64_t packed = packs.count(job.sweep_id()) ? job.sweep_id() : 0;
  return absl::StrCat(spec.backend(), "|", spec.device(), "|", spec.devices(), "|", RankCount(spec),
                      "|", job.exclusive(), "|", packed);
}

}  // namespace

SortedQueue SortQueue(std::vector<Job> queued,
                      const std::function<absl::StatusOr<Job::State>(int64_t)>& state_of,
                      const std::function<absl::Status(const Job&)>& may_run) {
  // A state read once per pass, however many queued jobs name the same dependency (a sweep run
  // after one job).
  std::map<int64_t, absl::StatusOr<Job::State>> states;
  auto remembered = [&](int64_t id) -> const absl::StatusOr<Job::State>& {
    auto it = states.find(id);
    if (it == states.end()) it = states.emplace(id, state_of(id)).first;
    return it->second;
  };
  SortedQueue sorted;
  for (Job& job : queued) {
    const Dependencies dependencies = CheckDependencies(job, remembered);
    if (!dependencies.broken.empty()) {
      sorted.to_end.push_back({job.id(), Job::CANCELLED, dependencies.broken});
      continue;
    }
    if (!dependencies.succeeded) continue;
    if (absl::Status runnable = may_run(job); !runnable.ok()) {
      sorted.to_end.push_back({job.id(), Job::FAILED, std::string(runnable.message())});
      continue;
    }
    sorted.ready.push_back(std::move(job));
  }
  return sorted;
}

HeldDevices HeldBy(const Job& job, const std::vector<std::string>& devices) {
  if (IsSlurmJob(job.spec())) return HeldDevices{devices, false, false, true, job.sweep_id()};
  return HeldDevices{devices, RankCount(job.spec()) > 1, job.exclusive(), false, job.sweep_id()};
}

int PlaceReady(const DevicePlan& plan, const std::vector<Job>& ready,
               std::vector<HeldDevices> holding, const std::function<bool(const Job&)>& skip,
               const std::function<bool(const Job&, const std::vector<std::string>&)>& start,
               const PackWidths& packs) {
  std::set<std::string> held;  // devices kept for a data-parallel job ahead in the queue
  // Within a pass devices only fill up (`holding` and `held` only grow), so a job like one that
  // could not be placed cannot be placed either: with 10,000 queued jobs of a few kinds the pass
  // tries each kind once instead of each job.
  std::set<std::string> cannot_place;
  int started = 0;
  for (const Job& job : ready) {
    if (skip(job)) continue;
    const std::string kind = PlacementClass(job, packs);
    if (cannot_place.count(kind)) continue;
    std::optional<std::vector<std::string>> devices = plan.Place(job, holding, held, packs);
    if (!devices) {
      // The exclusive job next in line holds everything behind it, or it would starve; a
      // data-parallel job holds its devices.
      if (job.exclusive()) return started;
      const std::set<std::string> hold = plan.Hold(job);
      held.insert(hold.begin(), hold.end());
      cannot_place.insert(kind);
      continue;
    }
    if (!start(job, *devices)) continue;
    ++started;
    holding.push_back(HeldBy(job, *devices));
    if (job.exclusive()) return started;
  }
  return started;
}

}  // namespace traind
