#include "common/busy_shares.h"

#include <algorithm>

namespace traind {

BusyShares::Shares BusyShares::AtStepReport(const BusyTotals& now) {
  Shares shares;
  if (now.of > 0) shares.run = std::clamp(now.busy / now.of, 0.0, 1.0);
  if (!first_step_) {
    first_step_ = now;
    return shares;
  }
  if (const double of = now.of - first_step_->of; of > 0) {
    shares.training = std::clamp((now.busy - first_step_->busy) / of, 0.0, 1.0);
  }
  return shares;
}

}  // namespace traind
