// How busy a job kept its device: over its whole run, and over its training alone (from its first
// step report on, start-up left out). Both are shares of running totals, "busy" over "of": a GPU's
// sampled busy fractions over their count, a process's CPU seconds over its cores' seconds, or
// multiprocessor-seconds over seconds. A built-in job's worker (engine/device_activity.cc) and a
// program's runner (script/program_memory.cc) report them in each step report
// (StepMetrics.device_busy, device_busy_training, device_sm_active...).
#ifndef TRAIND_COMMON_BUSY_SHARES_H_
#define TRAIND_COMMON_BUSY_SHARES_H_

#include <optional>

namespace traind {

struct BusyTotals {
  double busy = 0;
  double of = 0;
};

class BusyShares {
 public:
  struct Shares {
    std::optional<double> run;       // since the job started; unset before anything was counted
    std::optional<double> training;  // since the first step report; unset at that report
  };
  // The shares at a step report whose totals since the job started are `now`; the first call
  // marks where the training starts. Each is clamped to 0..1.
  Shares AtStepReport(const BusyTotals& now);

 private:
  std::optional<BusyTotals> first_step_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_BUSY_SHARES_H_
