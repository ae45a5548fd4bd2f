#include "script/read_pacing.h"

#include <algorithm>

namespace traind {

absl::Duration ReadPause(size_t bytes, bool nearly_full, absl::Duration since_previous_read,
                         size_t pipe_capacity) {
  if (bytes < ReadPacing::kFloodBytes || nearly_full) return absl::ZeroDuration();
  // At the rate `bytes` arrived, the time a quarter of the pipe takes to fill.
  const absl::Duration quarter_fills =
      since_previous_read * (static_cast<double>(pipe_capacity) / 4 / static_cast<double>(bytes));
  return std::clamp(quarter_fills, ReadPacing::kShortest, ReadPacing::kLongest);
}

}  // namespace traind
