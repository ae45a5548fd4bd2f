#include "server/search_packer.h"

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "common/job_spec.h"

namespace traind {

namespace {

// One process on one GPU, or on the CPU lane: where trials pack. Admission names the GPU of a
// job on "cuda" ("cuda:0"); "cuda" itself is the spec as submitted.
bool OnOneDevice(const trainer::v1::JobSpec& spec) {
  const bool one_gpu = IsCudaDevice(spec.device()) && spec.gpus() <= 1 && spec.devices().empty();
  const bool cpu = spec.device() == "cpu" && spec.processes() <= 1;
  return (one_gpu || cpu) && spec.hosts().empty() && spec.backend() != "slurm";
}

// The largest batch size a trial of `spec` may draw (its base's when batch_size is not searched).
int64_t LargestBatch(const trainer::v1::SweepSpec& spec, const SearchPlan& plan) {
  int64_t largest = spec.base().batch_size();
  for (const auto& [field, distribution] : plan.space.params) {
    if (field != "batch_size" && field != "param.batch_size") continue;  // a program's {batch_size}
    for (const std::string& value : DistributionExtremes(distribution)) {
      double batch = 0;
      if (absl::SimpleAtod(value, &batch)) largest = std::max(largest, static_cast<int64_t>(batch));
    }
  }
  return largest;
}

}  // namespace

std::optional<Packing> DecideSearchPacking(const trainer::v1::SweepSpec& spec,
                                           const SearchPlan& plan,
                                           const std::vector<trainer::v1::Job>& live,
                                           const PackingHost& host) {
  if (!OnOneDevice(spec.base())) return std::nullopt;
  PackingFacts facts;
  facts.on_cpu = spec.base().device() == "cpu";
  facts.max_pack = spec.search().max_pack();
  facts.host_cores = host.host_cores;
  facts.lanes = host.lanes;
  facts.largest_batch = LargestBatch(spec, plan);
  // Trials ending in the same pass: the busiest and fullest count.
  for (const trainer::v1::Job& job : live) {
    const std::optional<AloneFootprint> reading = AloneReading(job);
    if (reading) facts.alone = facts.alone ? Larger(*facts.alone, *reading) : *reading;
  }
  if (facts.max_pack != 1 && !facts.alone) return std::nullopt;
  facts.side_by_side = !facts.on_cpu && facts.alone && facts.max_pack != 1 && host.side_by_side &&
                       host.side_by_side();
  return DecidePacking(facts);
}

}  // namespace traind
