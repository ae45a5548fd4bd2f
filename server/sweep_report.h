// Builds a sweep's report from its member jobs and their StepMetrics: one row per configuration,
// medians over repeats, speedup against the row's baseline (by default the same configuration on
// the CPU; or the one with another field at a given value, e.g. amp=""), and flags where a row
// disagrees with its baseline. Pure: the caller reads the store.
#ifndef TRAIND_SERVER_SWEEP_REPORT_H_
#define TRAIND_SERVER_SWEEP_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

struct SweepReportOptions {
  // A row's baseline is the row whose spec differs from it at most in this field, which holds
  // this value there.
  std::string baseline_field = "device";
  std::string baseline_value = "cpu";  // as jobs store it ("" for amp=fp32)
  std::string baseline_text = "cpu";   // as the user wrote it, for captions and flags
  double accuracy_tolerance = 0.02;    // absolute, on 0..1
  double loss_tolerance = 0.25;        // relative
  double time_to_accuracy = 0;         // > 0: also the time each row took to reach it
  // The winning row is chosen by best validation accuracy before test accuracy: a search's by
  // validation accuracy, so that the table's best and the search's agree on what counts.
  bool validation_first = false;
};

// What the report needs of a job's event log.
struct JobTrace {
  std::vector<trainer::v1::StepMetrics> steps;  // in order: loss curve, batches per epoch
  double final_train_loss = 0;                  // the last epoch's mean training loss
  // Evaluated epochs, in order: validation accuracy, training time (EpochSummary's elapsed
  // seconds) and wall time since the job first started running, when it was reported.
  struct Evaluated {
    double validation_accuracy = 0;
    double train_seconds = 0;
    double wall_seconds = 0;
  };
  std::vector<Evaluated> evaluated;
};

// Reads a baseline as `trainctl report --baseline` takes it: a device ("cpu", "cuda:0") or
// FIELD=VALUE with a JobSpec field in either spelling ("amp=", "batchSize=64"). INVALID_ARGUMENT
// naming an unknown field.
absl::Status ParseBaseline(const std::string& text, SweepReportOptions* options);

// A row's loss curve has at most this many points (its run's steps, evenly thinned).
inline constexpr size_t kMaxLossCurvePoints = 256;

// Keeps `report` within `max_bytes` (a reply any client accepts): rows after the budget is spent
// are left out (the best and the baseline rows never) and counted in rows_not_shown.
void BoundReportSize(trainer::v1::SweepReport* report, size_t max_bytes);

trainer::v1::SweepReport BuildSweepReport(const trainer::v1::Sweep& sweep,
                                          const std::vector<trainer::v1::Job>& jobs,
                                          const std::map<int64_t, JobTrace>& traces,
                                          const SweepReportOptions& options);

}  // namespace traind

#endif  // TRAIND_SERVER_SWEEP_REPORT_H_
