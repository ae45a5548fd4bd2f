// ReadPause: how long the runner lets a program's output gather in the pipe before reading again.
// A program printing fast (a line per batch, 100,000 a second) would otherwise wake the runner for
// every few kilobytes, and with every CPU busy each wake-up takes the program's CPU from it: the
// program paid about three times the runner's own CPU time. Read in pauses, the runner wakes a
// few dozen times a second. A program that prints now and then is read at once, and a pipe
// nearly full is read again at once: the program may be blocked on it, and a pause must never
// cap its rate (one did: a read of at most 64 KiB per 10 ms blocked a program printing 7 MB/s).
#ifndef TRAIND_SCRIPT_READ_PACING_H_
#define TRAIND_SCRIPT_READ_PACING_H_

#include <cstddef>

#include "absl/time/time.h"

namespace traind {

struct ReadPacing {
  // A read that brings less than this is not a flood: no pause.
  static constexpr size_t kFloodBytes = 4096;
  // The pause aims to let the pipe fill to a quarter of its capacity at the rate just seen, and is
  // kept within these: a pipe the system would not enlarge (64 KiB) gets the shortest.
  static constexpr absl::Duration kShortest = absl::Milliseconds(10);
  static constexpr absl::Duration kLongest = absl::Milliseconds(50);
};

// The pause before the next read, after one that brought `bytes` (of all streams together)
// `since_previous_read` after the one before; `nearly_full`: a stream's read took half its pipe;
// `pipe_capacity`: the smallest of the streams' pipes. Zero: read again at once.
absl::Duration ReadPause(size_t bytes, bool nearly_full, absl::Duration since_previous_read,
                         size_t pipe_capacity);

}  // namespace traind

#endif  // TRAIND_SCRIPT_READ_PACING_H_
