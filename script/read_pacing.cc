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
  const double quarter = static_cast<double>(pipe_capacity_) / 4;
  // The time a quarter of the pipe takes to fill: at the rate `bytes` arrived, known only between
  // two reads of a flood.
  const absl::Duration quarter_fills = rate_known
                                           ? since_previous * (quarter / static_cast<double>(bytes))
                                           : absl::Seconds(quarter / kFirstReadBytesPerSecond);
  return std::clamp(quarter_fills, kShortest, kLongest);
}

}  // namespace traind
