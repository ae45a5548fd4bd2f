#include "server/device_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"

namespace traind {

using trainer::v1::Job;

DevicePlan::DevicePlan(std::vector<std::string> gpus, std::map<std::string, int> slots)
    : gpus_(std::move(gpus)), slots_(std::move(slots)) {}

int DevicePlan::SlotsOf(const std::string& device) const {
  auto it = slots_.find(device);
  if (it == slots_.end() && device == "slurm") return kDefaultSlurmJobs;
  if (it == slots_.end() && device.rfind("cuda:", 0) == 0) it = slots_.find("cuda");
  return it == slots_.end() ? 1 : it->second;
}

namespace {

bool OnGpus(const trainer::v1::JobSpec& spec) { return spec.gpus() > 0 || !spec.devices().empty(); }

}  // namespace

absl::Status CheckGpusExist(const trainer::v1::JobSpec& spec,
                            const std::vector<std::string>& gpus) {
  if (!OnGpus(spec)) return absl::OkStatus();
  const std::string here =
      gpus.empty() ? "no GPU" : absl::StrCat(gpus.size(), " (", absl::StrJoin(gpus, ", "), ")");
  if (spec.gpus() > static_cast<int>(gpus.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus: ", spec.gpus(), " requested, this machine has ", here));
  }
  absl::StatusOr<std::vector<std::string>> listed = ParseDeviceList(spec.devices());
  if (!listed.ok()) return listed.status();
  for (const std::string& device : *listed) {
    if (std::find(gpus.begin(), gpus.end(), device) == gpus.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("devices: ", device, " is not on this machine, which has ", here));
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<std::string>> DevicePlan::Place(const Job& job,
                                                          const std::vector<HeldDevices>& running,
                                                          const std::set<std::string>& held,
                                                          const PackWidths& packs) const {
  const trainer::v1::JobSpec& spec = job.spec();
  if (IsSlurmJob(spec)) {
    // Slurm places it; here only how many run at once (each is a launcher polling Slurm).
    const int on_slurm = static_cast<int>(std::count_if(
        running.begin(), running.end(), [](const HeldDevices& r) { return r.remote; }));
    if (on_slurm >= SlotsOf("slurm")) return std::nullopt;
    return std::vector<std::string>{"slurm"};
  }
  std::map<std::string, int> load;    // running jobs per device
  std::map<std::string, int> others;  // of those, not trials of `job`'s search
  std::set<std::string> whole;        // devices a data-parallel job holds
  for (const HeldDevices& r : running) {
    if (r.remote) continue;
    if (r.exclusive || job.exclusive()) return std::nullopt;
    const std::set<std::string> distinct(r.devices.begin(), r.devices.end());
    for (const std::string& device : distinct) {
      ++load[device];
      if (r.sweep_id == 0 || r.sweep_id != job.sweep_id()) ++others[device];
      if (r.whole) whole.insert(device);
    }
  }
  auto pack = packs.find(job.sweep_id());
  const int pack_width = job.sweep_id() != 0 && pack != packs.end() ? pack->second : 1;
  // This host's ranks of a job on several hosts take their devices whole, even one rank: it
  // waits in collectives for the other hosts' ranks.
  const bool several_hosts = !spec.hosts().empty();
  const int ranks = several_hosts ? RanksPerHost(spec) : RankCount(spec);
  auto idle = [&](const std::string& device) { return load[device] == 0 && !held.count(device); };
  // Room for a one-device job: a free slot, or room among its own search's packed trials. Each
  // slot packs the width (the search keeps lanes x width in flight, and tells each trial so many
  // share the host's cores: server/trial_packing.h).
  auto room = [&](const std::string& device) {
    if (load[device] < SlotsOf(device)) return true;
    return pack_width > 1 && others[device] == 0 && load[device] < SlotsOf(device) * pack_width;
  };

  if (OnGpus(spec) || (several_hosts && spec.device() == "cuda")) {
    absl::StatusOr<std::vector<std::string>> listed = ParseDeviceList(spec.devices());
    if (!listed.ok()) return std::nullopt;  // validated at submit
    std::vector<std::string> chosen;
    if (!listed->empty()) {
      for (const std::string& device : *listed) {
        if (!idle(device)) return std::nullopt;
      }
      chosen = *listed;
    } else if (ranks == 1 && !several_hosts) {
      // One GPU, any: the least busy one with room, the lowest index on a tie.
      const std::string* best = nullptr;
      for (const std::string& device : gpus_) {
        if (whole.count(device) || held.count(device) || !room(device)) continue;
        if (best == nullptr || load[device] < load[*best]) best = &device;
      }
      if (best == nullptr) return std::nullopt;
      chosen = {*best};
    } else {
      for (const std::string& device : gpus_) {
        if (static_cast<int>(chosen.size()) == ranks) break;
        if (idle(device)) chosen.push_back(device);
      }
      if (static_cast<int>(chosen.size()) < ranks) return std::nullopt;
    }
    return chosen;
  }

  const std::string& device = spec.device();
  if (ranks > 1 || several_hosts) {  // CPU ranks: the whole CPU
    if (!idle(device)) return std::nullopt;
    return std::vector<std::string>(static_cast<size_t>(ranks), device);
  }
  if (whole.count(device) || held.count(device) || !room(device)) return std::nullopt;
  return std::vector<std::string>{device};
}

absl::Status DevicePlan::Feasible(const Job& job) const {
  const trainer::v1::JobSpec& spec = job.spec();
  if (!spec.hosts().empty() && spec.device() == "cuda" &&
      RanksPerHost(spec) > static_cast<int>(gpus_.size())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device: cuda for ", RanksPerHost(spec), " rank(s) on each host; this one has ",
        gpus_.empty() ? "no GPU" : absl::StrCat(gpus_.size(), " GPU(s)")));
  }
  absl::Status exist = CheckGpusExist(spec, gpus_);
  return exist.ok() ? exist : absl::FailedPreconditionError(exist.message());
}

std::set<std::string> DevicePlan::Hold(const Job& job) const {
  const trainer::v1::JobSpec& spec = job.spec();
  if (RankCount(spec) <= 1 || IsSlurmJob(spec)) return {};
  if (!OnGpus(spec) && !(!spec.hosts().empty() && spec.device() == "cuda")) return {spec.device()};
  absl::StatusOr<std::vector<std::string>> listed = ParseDeviceList(spec.devices());
  if (listed.ok() && !listed->empty()) return {listed->begin(), listed->end()};
  return {gpus_.begin(), gpus_.end()};  // any of them may be the ones it gets
}

int DevicePlan::Lanes(const trainer::v1::JobSpec& spec) const {
  if (RankCount(spec) > 1 || IsSlurmJob(spec) || !spec.hosts().empty()) return 1;
  if (spec.device() != "cuda") return SlotsOf(spec.device().empty() ? "cpu" : spec.device());
  int lanes = 0;
  for (const std::string& gpu : gpus_) lanes += SlotsOf(gpu);
  return std::max(1, lanes);
}

}  // namespace traind
