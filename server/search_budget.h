// A search's device-time budget (SearchSpec.device_hours): what its trials have spent (every
// epoch's training time, JobResult.epoch_seconds_no_eval, as the report and the benchmarks count
// it), what its running trials will still spend to their rungs, and whether a new trial or a
// promotion fits. An epoch's cost is estimated as the mean of the epochs trained so far; before
// the first one, nothing is refused (the first trials measure it).
// The driver's thread only.
#ifndef TRAIND_SERVER_SEARCH_BUDGET_H_
#define TRAIND_SERVER_SEARCH_BUDGET_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "search/asha.h"
#include "server/search_plan.h"
#include "server/store.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct Spend {
  double budget_seconds = 0;     // 0: none
  double spent_seconds = 0;      // every trial's epochs so far
  double epoch_seconds = 0;      // the mean epoch; 0: none trained yet
  double committed_seconds = 0;  // the running trials' epochs still to come, estimated
};

// Whether `epochs` more epochs fit the budget, with what is spent and committed.
bool Affordable(const Spend& spend, int64_t epochs);

class SearchBudget {
 public:
  // `jobs`: the search's trials' jobs, as read this pass (an id only for those not read: their
  // time is read once, then remembered: they have ended). `state`: which trials run.
  absl::StatusOr<Spend> Read(Store* store, const Store::SearchRecord& record,
                             const SearchPlan& plan, const std::vector<trainer::v1::Job>& jobs,
                             const AshaState& state);
  void Forget(int64_t sweep_id) { seconds_.erase(sweep_id); }

 private:
  // By search, by job: training seconds and epochs of trials read before.
  struct Trained {
    double seconds = 0;
    int epochs = 0;
  };
  std::map<int64_t, std::map<int64_t, Trained>> seconds_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_SEARCH_BUDGET_H_
