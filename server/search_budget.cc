#include "server/search_budget.h"

#include <algorithm>

#include "common/job_result.h"
#include "common/status_macros.h"

namespace traind {

bool Affordable(const Spend& spend, int64_t epochs) {
  if (spend.budget_seconds <= 0 || spend.epoch_seconds <= 0) return true;
  return spend.spent_seconds + spend.committed_seconds +
             static_cast<double>(epochs) * spend.epoch_seconds <=
         spend.budget_seconds;
}

absl::StatusOr<Spend> SearchBudget::Read(Store* store, const Store::SearchRecord& record,
                                         const SearchPlan& plan,
                                         const std::vector<trainer::v1::Job>& jobs,
                                         const AshaState& state) {
  Spend spend;
  spend.budget_seconds = record.spec.search().device_hours() * 3600.0;
  if (spend.budget_seconds <= 0) return spend;
  std::map<int64_t, Trained>& known = seconds_[record.sweep_id];
  int epochs = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const trainer::v1::Job& job = jobs[k];
    if (job.has_spec()) {  // read this pass
      known[job.id()] = {TrainingSeconds(job), job.result().epoch_seconds_no_eval_size()};
    } else if (!known.count(job.id())) {
      ASSIGN_OR_RETURN(const trainer::v1::Job ended, store->GetJob(job.id()));
      known[job.id()] = {TrainingSeconds(ended), ended.result().epoch_seconds_no_eval_size()};
    }
    spend.spent_seconds += known[job.id()].seconds;
    epochs += known[job.id()].epochs;
  }
  if (epochs > 0) spend.epoch_seconds = spend.spent_seconds / epochs;
  for (size_t k = 0; k < state.trials.size() && k < jobs.size(); ++k) {
    if (state.trials[k].status != AshaTrialStatus::kRunning) continue;
    const int64_t to = NextStopEpochs(plan.asha, state.trials[k]);
    spend.committed_seconds +=
        static_cast<double>(std::max<int64_t>(0, to - known[jobs[k].id()].epochs)) *
        spend.epoch_seconds;
  }
  return spend;
}

}  // namespace traind
