#include "server/search_packer.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "common/log_priority.h"

namespace traind {

namespace {

bool OnOneGpu(const trainer::v1::JobSpec& spec) {
  return spec.device() == "cuda" && spec.gpus() <= 1 && spec.devices().empty() &&
         spec.hosts().empty() && spec.backend() != "slurm";
}

}  // namespace

int64_t SearchPacker::LargestBatch(const trainer::v1::SweepSpec& spec, const SearchPlan& plan) {
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

int SearchPacker::Update(int64_t sweep_id, const trainer::v1::SweepSpec& spec,
                         const SearchPlan& plan, const std::vector<trainer::v1::Job>& live,
                         const std::optional<Packing>& stored) {
  if (!OnOneGpu(spec.base())) return 1;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = decided_.find(sweep_id); it != decided_.end()) return it->second.width;
  }
  Packing decided;
  if (stored) {
    decided = *stored;
  } else {
    PackingFacts facts;
    facts.max_pack = spec.search().max_pack();
    facts.host_cores = options_.host_cores;
    facts.largest_batch = LargestBatch(spec, plan);
    // Until a trial's run ended alone, nothing is measured (1 per GPU); trials ending in the same
    // pass: the busiest and fullest count.
    for (const trainer::v1::Job& job : live) {
      const std::optional<AloneFootprint> reading = AloneReading(job);
      if (reading) facts.alone = facts.alone ? Larger(*facts.alone, *reading) : *reading;
    }
    if (facts.max_pack != 1 && !facts.alone) return 1;
    decided = DecidePacking(facts);
    LogAt(LogPriority::kInfo) << "traind: search " << sweep_id << ": " << decided.why << "\n";
  }
  {
    absl::MutexLock lock(&mu_);
    decided_[sweep_id] = decided;
  }
  if (options_.set_width) options_.set_width(sweep_id, decided.width);
  return decided.width;
}

std::optional<Packing> SearchPacker::Decided(int64_t sweep_id) const {
  absl::MutexLock lock(&mu_);
  auto it = decided_.find(sweep_id);
  if (it == decided_.end()) return std::nullopt;
  return it->second;
}

void SearchPacker::Forget(int64_t sweep_id) {
  bool packed = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = decided_.find(sweep_id);
    if (it == decided_.end()) return;
    packed = it->second.width > 1;
    decided_.erase(it);
  }
  if (packed && options_.set_width) options_.set_width(sweep_id, 1);
}

}  // namespace traind
