#include "common/output_budget.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace traind {

void OutputBudget::Refill(absl::Time now) {
  if (now == last_refill_) return;  // the lines of one read of the output share a time
  if (last_refill_ != absl::InfinitePast()) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_refill_) * per_second_);
  }
  last_refill_ = now;
}

bool OutputBudget::HasRoom(absl::Time now) {
  Refill(now);
  return tokens_ >= 1;
}

bool OutputBudget::Admit(absl::Time now, double cost) {
  Refill(now);
  // A cost above the burst could never be paid: it is paid from a full bucket instead.
  cost = std::min(cost, burst_);
  if (tokens_ >= cost) {
    tokens_ -= cost;
    return true;
  }
  ++dropped_since_note_;
  ++dropped_total_;
  return false;
}

std::optional<std::string> OutputBudget::Note(absl::Time now, bool force, absl::Duration every) {
  if (dropped_since_note_ == 0 || (!force && now - last_note_ < every)) return std::nullopt;
  std::string note = absl::StrCat(
      "traind: ", dropped_since_note_, " ", what_, " not stored (more than ", per_second_,
      " a second after a burst of ", burst_, "); ", dropped_total_, " in all so far");
  dropped_since_note_ = 0;
  last_note_ = now;
  return note;
}

}  // namespace traind
