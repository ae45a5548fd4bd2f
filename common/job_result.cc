#include "common/job_result.h"

namespace traind {

using trainer::v1::Job;

bool ReportsTestAccuracy(const Job& job) {
  if (job.state() != Job::SUCCEEDED || job.spec().has_benchmark()) return false;
  return job.result().has_test_accuracy();
}

bool ReportsValidation(const Job& job) { return job.result().best_epoch() > 0; }

double TrainingSeconds(const Job& job) {
  double seconds = 0;
  for (double epoch : job.result().epoch_seconds_no_eval()) seconds += epoch;
  return seconds;
}

}  // namespace traind
