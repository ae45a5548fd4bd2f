#include "script/read_pacing.h"

#include <algorithm>

namespace traind {

absl::Duration ReadPacer::Next(size_t bytes, bool nearly_full, absl::Time now) {
  const bool flood = bytes >= kFloodBytes;
  const bool rate_known = flood && previous_was_flood_;
  const absl::Duration since_previous = now - previous_read_;
  previous_read_ = now;
  previous_was_flood_ = flood;
  if (!flood || nearly_full) return absl::ZeroDuration();
  // Only between two reads of a flood: after a quiet spell the time since the last read says
  // nothing of the rate, and a flood that starts then would fill a small pipe within the pause.
  if (!rate_known) return kShortest;
  // At the rate `bytes` arrived, the time a quarter of the pipe takes to fill.
  const absl::Duration quarter_fills =
      since_previous * (static_cast<double>(pipe_capacity_) / 4 / static_cast<double>(bytes));
  return std::clamp(quarter_fills, kShortest, kLongest);
}

}  // namespace traind
