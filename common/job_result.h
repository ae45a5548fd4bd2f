// What a job's result holds, for everything that shows or compares results (`show`, `list`, the
// sweep report): a program reports only what it prints, and a value it never printed is absent,
// never 0. The rules live here, once.
#ifndef TRAIND_COMMON_JOB_RESULT_H_
#define TRAIND_COMMON_JOB_RESULT_H_

#include "trainer/v1/trainer.pb.h"

namespace traind {

// A succeeded training job's test accuracy is real: a built-in job always tests; a program's is
// the one it printed (JobResult.test_accuracy is unset when it printed none).
bool ReportsTestAccuracy(const trainer::v1::Job& job);

// The job validated at least once: epochs count from 1, so best_epoch 0 means never.
bool ReportsValidation(const trainer::v1::Job& job);

// The job's training time: every epoch's (JobResult.epoch_seconds_no_eval) summed. A search's
// device-time, its budget and its report count this.
double TrainingSeconds(const trainer::v1::Job& job);

}  // namespace traind

#endif  // TRAIND_COMMON_JOB_RESULT_H_
