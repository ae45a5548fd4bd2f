// Builds a sweep's report from its member jobs and their StepMetrics: one row per configuration
// (members that differ only in device form rows with the same config), medians over repeats,
// speedup against the baseline device's row, and flags where a row disagrees with its baseline.
// Pure: the caller reads the store.
#ifndef TRAIND_SERVER_SWEEP_REPORT_H_
#define TRAIND_SERVER_SWEEP_REPORT_H_

#include <map>
#include <vector>

#include "trainer/v1/trainer.pb.h"

namespace traind {

struct SweepReportOptions {
  std::string baseline_device = "cpu";
  double accuracy_tolerance = 0.02;  // absolute, on 0..1
  double loss_tolerance = 0.25;      // relative
};

// What the report needs of a job's event log.
struct JobTrace {
  std::vector<trainer::v1::StepMetrics> steps;  // in order: loss curve, batches per epoch
  double final_train_loss = 0;                  // the last epoch's mean training loss
};

trainer::v1::SweepReport BuildSweepReport(const trainer::v1::Sweep& sweep,
                                          const std::vector<trainer::v1::Job>& jobs,
                                          const std::map<int64_t, JobTrace>& traces,
                                          const SweepReportOptions& options);

}  // namespace traind

#endif  // TRAIND_SERVER_SWEEP_REPORT_H_
