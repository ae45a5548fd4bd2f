#include "common/job_result.h"

namespace traind {

using trainer::v1::Job;

bool ReportsTestAccuracy(const Job& job) {
  if (job.state() != Job::SUCCEEDED || job.spec().has_benchmark()) return false;
  return !job.spec().has_script() || job.result().test_accuracy() > 0;
}

bool ReportsValidation(const Job& job) { return job.result().best_epoch() > 0; }

}  // namespace traind
