#include "engine/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace traind {

namespace {
constexpr double kPi = 3.14159265358979323846;
// onecycle, as PyTorch's OneCycleLR: start at peak / 25, end at that / 1e4.
constexpr double kOneCycleStartDivisor = 25;
constexpr double kOneCycleFinalDivisor = 1e4;
constexpr double kOneCycleDefaultWarmup = 0.3;  // of the run
}  // namespace

LrSchedule::LrSchedule(const trainer::v1::JobSpec& spec, int64_t steps_per_epoch)
    : peak_(spec.learning_rate()), steps_per_epoch_(std::max<int64_t>(steps_per_epoch, 1)) {
  const std::string& name = spec.lr_schedule();
  kind_ = name == "step"       ? Kind::kStep
          : name == "cosine"   ? Kind::kCosine
          : name == "onecycle" ? Kind::kOneCycle
                               : Kind::kConstant;
  total_ = std::max<int64_t>(int64_t{spec.epochs()} * steps_per_epoch_, 1);
  double warmup_epochs = spec.warmup_epochs();
  if (kind_ == Kind::kOneCycle && warmup_epochs <= 0) {
    warmup_epochs = kOneCycleDefaultWarmup * spec.epochs();
  }
  warmup_ = std::min<int64_t>(static_cast<int64_t>(std::llround(warmup_epochs * steps_per_epoch_)),
                              total_);
  step_epochs_ =
      spec.lr_step_epochs() > 0 ? spec.lr_step_epochs() : std::max<int64_t>(spec.epochs() / 3, 1);
  gamma_ = spec.has_lr_step_gamma() ? spec.lr_step_gamma() : 0.1;
  varies_ = kind_ != Kind::kConstant || warmup_ > 0;
}

double LrSchedule::At(int64_t step) const {
  step = std::clamp<int64_t>(step, 0, total_ - 1);
  const double start = kind_ == Kind::kOneCycle ? peak_ / kOneCycleStartDivisor : 0.0;
  if (step < warmup_) {
    // Linear from `start` (0 for the others: the first step gets peak / warmup) up to the peak.
    const double t = static_cast<double>(step + 1) / static_cast<double>(warmup_);
    return start + (peak_ - start) * t;
  }
  switch (kind_) {
    case Kind::kConstant:
      return peak_;
    case Kind::kStep:
      return peak_ * std::pow(gamma_, static_cast<double>(step / steps_per_epoch_ / step_epochs_));
    case Kind::kCosine:
    case Kind::kOneCycle: {
      const double floor = kind_ == Kind::kOneCycle ? start / kOneCycleFinalDivisor : 0.0;
      const int64_t span = std::max<int64_t>(total_ - warmup_ - 1, 1);
      const double t = static_cast<double>(step - warmup_) / static_cast<double>(span);
      return floor + (peak_ - floor) * 0.5 * (1 + std::cos(kPi * std::min(t, 1.0)));
    }
  }
  return peak_;
}

}  // namespace traind
