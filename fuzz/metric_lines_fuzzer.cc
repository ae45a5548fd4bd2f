// Fuzz target: what a user's training script prints (script/metric_lines.h), split into lines as
// the script runner splits its output ('\n' and a tqdm bar's '\r'), read line by line. Any bytes
// must give events that make sense (an epoch from 1, a batch from 0), and a reader that counts
// some steps without making them must agree with one that reads every line in full; anything
// else (a crash, a leak, undefined behaviour) is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/string_view.h"
#include "script/metric_lines.h"

namespace {

void Check(const std::vector<trainer::v1::JobEvent>& events) {
  for (const trainer::v1::JobEvent& e : events) {
    if (e.has_step() && (e.step().epoch() < 1 || e.step().batch() < 0 ||
                         e.step().batches_per_epoch() < 0 || e.step().epochs() < 0)) {
      std::abort();
    }
    if (e.has_epoch_summary() && e.epoch_summary().epoch() < 1) std::abort();
  }
}

bool SameEvents(const std::vector<trainer::v1::JobEvent>& a,
                const std::vector<trainer::v1::JobEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].SerializeAsString() != b[i].SerializeAsString()) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  // `counting` reads every third line as the runner reads a step over its budget (counted, not
  // made); `full` reads every line in full. Both must agree on all but the steps not made.
  traind::MetricLines counting, full;
  size_t start = 0;
  int64_t lines = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n' || text[i] == '\r') {
      const absl::string_view line = text.substr(start, i - start);
      const bool count_only = ++lines % 3 == 0;
      std::vector<trainer::v1::JobEvent> got =
          counting.Read(line, count_only ? traind::MetricLines::Steps::kCountOnly
                                         : traind::MetricLines::Steps::kMake);
      std::vector<trainer::v1::JobEvent> expected = full.Read(line);
      Check(got);
      Check(expected);
      if (count_only) {
        expected.erase(std::remove_if(expected.begin(), expected.end(),
                                      [](const trainer::v1::JobEvent& e) { return e.has_step(); }),
                       expected.end());
      }
      if (!SameEvents(got, expected) || counting.epoch() != full.epoch() ||
          counting.steps_read() != full.steps_read() ||
          counting.metric_lines() != full.metric_lines() || counting.epoch() < 1) {
        std::abort();
      }
      start = i + 1;
    }
  }
  if (!SameEvents(counting.Finish(), full.Finish())) std::abort();
  return 0;
}
