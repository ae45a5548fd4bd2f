// The learning rate at each step of a run (JobSpec.lr_schedule, warmup_epochs, lr_step_epochs,
// lr_step_gamma): a pure function of the spec and the step, so a job resumed from a checkpoint
// continues on the same curve. No LibTorch here; the training loop applies it to the optimizer.
#ifndef TRAIND_ENGINE_LR_SCHEDULE_H_
#define TRAIND_ENGINE_LR_SCHEDULE_H_

#include <cstdint>

#include "trainer/v1/trainer.pb.h"

namespace traind {

class LrSchedule {
 public:
  // `steps_per_epoch`: optimizer steps (batches) per epoch; the run has spec.epochs() of them.
  LrSchedule(const trainer::v1::JobSpec& spec, int64_t steps_per_epoch);

  // The rate for step `step` (0-based, counted over the whole run).
  double At(int64_t step) const;
  // Whether the rate ever changes (else the optimizer is left alone).
  bool varies() const { return varies_; }

 private:
  enum class Kind { kConstant, kStep, kCosine, kOneCycle };
  Kind kind_;
  double peak_;
  int64_t total_;
  int64_t warmup_;
  int64_t steps_per_epoch_;
  int64_t step_epochs_;
  double gamma_;
  bool varies_;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_LR_SCHEDULE_H_
