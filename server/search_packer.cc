#include "server/search_packer.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log_priority.h"

namespace traind {

namespace {

// Runs of trials measured alone that a decision waits for.
constexpr size_t kReadings = 1;

bool OnOneGpu(const trainer::v1::JobSpec& spec) {
  return spec.device() == "cuda" && spec.gpus() <= 1 && spec.devices().empty() &&
         spec.hosts().empty() && spec.backend() != "slurm";
}

}  // namespace

int64_t SearchPacker::LargestBatch(const trainer::v1::SweepSpec& spec, const SearchPlan& plan) {
  int64_t largest = spec.base().batch_size();
  for (const auto& [field, distribution] : plan.space.params) {
    if (field != "batch_size") continue;
    for (const std::string& value : DistributionExtremes(distribution)) {
      double batch = 0;
      if (absl::SimpleAtod(value, &batch)) largest = std::max(largest, static_cast<int64_t>(batch));
    }
  }
  return largest;
}

int SearchPacker::Update(int64_t sweep_id, const trainer::v1::SweepSpec& spec,
                         const SearchPlan& plan, const std::vector<trainer::v1::Job>& live) {
  if (!OnOneGpu(spec.base())) return 1;
  std::optional<Packing> decided;
  {
    absl::MutexLock lock(&mu_);
    State& state = states_[sweep_id];
    if (state.decided) return state.decided->width;
    const int max_pack = spec.search().max_pack();
    if (max_pack != 1) {
      for (const trainer::v1::Job& job : live) {
        std::optional<AloneFootprint> reading = AloneReading(job);
        if (!reading) continue;
        if (!state.positions.insert(absl::StrCat(job.id(), "/", job.runs())).second) continue;
        state.alone = state.alone ? Larger(*state.alone, *reading) : *reading;
      }
      if (state.positions.size() < kReadings) return 1;
    }
    PackingFacts facts;
    facts.max_pack = max_pack;
    facts.host_cores = options_.host_cores;
    facts.largest_batch = LargestBatch(spec, plan);
    facts.alone = state.alone;
    state.decided = DecidePacking(facts);
    decided = state.decided;
  }
  LogAt(LogPriority::kInfo) << "traind: search " << sweep_id << ": " << decided->why << "\n";
  if (options_.set_width) options_.set_width(sweep_id, decided->width);
  return decided->width;
}

void SearchPacker::Forget(int64_t sweep_id) {
  {
    absl::MutexLock lock(&mu_);
    auto it = states_.find(sweep_id);
    if (it == states_.end() || !it->second.decided || it->second.decided->width == 1) return;
  }
  if (options_.set_width) options_.set_width(sweep_id, 1);
}

std::string SearchPacker::Why(int64_t sweep_id) const {
  absl::MutexLock lock(&mu_);
  auto it = states_.find(sweep_id);
  return it == states_.end() || !it->second.decided ? "" : it->second.decided->why;
}

}  // namespace traind
