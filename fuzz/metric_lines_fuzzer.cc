// Fuzz target: what a user's training script prints (script/metric_lines.h), split into lines as
// the script runner splits its output ('\n' and a tqdm bar's '\r'), read line by line. Any bytes
// must give events that make sense (an epoch from 1, a batch from 0), with steps made or only
// counted, and nothing else: a crash, a leak or undefined behaviour is a finding.
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  traind::MetricLines reader;
  size_t start = 0;
  int64_t lines = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n' || text[i] == '\r') {
      // Every third line as the runner reads a step over its budget: counted, not made.
      const auto steps = ++lines % 3 == 0 ? traind::MetricLines::Steps::kCountOnly
                                          : traind::MetricLines::Steps::kMake;
      Check(reader.Read(text.substr(start, i - start), steps));
      if (reader.epoch() < 1) std::abort();
      start = i + 1;
    }
  }
  Check(reader.Finish());
  return 0;
}
