// LineForm: a line remembered for its form, to tell at the cost of one comparison whether a later
// line is the same line with other numbers: the same bytes outside its runs of digits, and the
// same digits in the runs marked fixed. A program printing a step a line at 100,000 lines a second
// prints one form with new numbers; MetricLines counts the steps the runner will not store
// (script/metric_lines.h) without parsing them when the numbers it marks fixed (the epoch, the
// epoch count, the batch count) are the same. Not thread-safe.
#ifndef TRAIND_SCRIPT_LINE_FORM_H_
#define TRAIND_SCRIPT_LINE_FORM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace traind {

class LineForm {
 public:
  // A byte range [first, second) of a line.
  using Range = std::pair<size_t, size_t>;

  // Remembers `line`; the runs of digits that overlap one of `fixed` must be the same in a line
  // that matches. Returns false and remembers nothing where a fixed run is past the 64th.
  bool Remember(absl::string_view line, absl::Span<const Range> fixed);
  void Forget() { remembered_ = false; }
  // Whether `line` is the remembered line with other digits in its runs that are not fixed (a run
  // may grow or shrink: "99" and "100" are runs of the same place). False when none is remembered.
  bool Matches(absl::string_view line) const;

 private:
  std::string line_;
  uint64_t fixed_runs_ = 0;  // bit k: the k-th run of digits is fixed
  bool remembered_ = false;
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_LINE_FORM_H_
