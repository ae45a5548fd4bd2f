// OutputBudget: how much of a program's output becomes stored events. A program may print
// without limit (100,000 lines a second, a loss per batch); the store and the watchers may not
// take it all. A token bucket per kind: a burst, then a steady rate; what is over is counted, not
// stored, and Note() says so now and then, so `trainctl logs` shows that lines were dropped and
// how many. The program itself is never slowed: its output is read as fast as it comes.
// Not thread-safe.
#ifndef TRAIND_COMMON_OUTPUT_BUDGET_H_
#define TRAIND_COMMON_OUTPUT_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace traind {

class OutputBudget {
 public:
  // `what` names the kind in notes ("lines of output"); `burst` taken at once, then `per_second`.
  OutputBudget(std::string what, double burst, double per_second)
      : what_(std::move(what)), burst_(burst), per_second_(per_second), tokens_(burst) {}

  // Whether one more, costing `cost` of the budget (a long line costs as several short ones),
  // may be stored at `now`; if so, it is counted as stored, if not as dropped.
  bool Admit(absl::Time now, double cost = 1);
  // Whether Admit(now) would say yes; counts nothing.
  bool HasRoom(absl::Time now);
  // "traind: 12345 lines of output not stored since ... (over 50 a second)" when some were
  // dropped since the last note and at least `every` has passed (or `force`, at the end).
  std::optional<std::string> Note(absl::Time now, bool force = false,
                                  absl::Duration every = absl::Seconds(10));
  int64_t dropped_total() const { return dropped_total_; }

 private:
  void Refill(absl::Time now);

  const std::string what_;
  const double burst_;
  const double per_second_;
  double tokens_;
  absl::Time last_refill_ = absl::InfinitePast();
  absl::Time last_note_ = absl::InfinitePast();
  int64_t dropped_since_note_ = 0;
  int64_t dropped_total_ = 0;
};

}  // namespace traind

#endif  // TRAIND_COMMON_OUTPUT_BUDGET_H_
