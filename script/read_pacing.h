// ReadPacer: how long the runner lets a program's output gather in the pipe before reading again.
// A program printing fast (a line per batch, 100,000 a second) would otherwise wake the runner for
// every few kilobytes, and with every CPU busy each wake-up takes the program's CPU from it: with
// pauses of 10 ms the program lost about as much time as the runner and traind spent CPU
// (docs/benchmarks-history.md, session 35). Read in pauses, the runner wakes 20 to 100 times a
// second. A program that prints now and then is read at once, and a pipe nearly full is read again
// at once: the program may be blocked on it, and a pause must never cap its rate (one did: a read
// of at most 64 KiB per 10 ms blocked a program printing 7 MB/s). Not thread-safe.
#ifndef TRAIND_SCRIPT_READ_PACING_H_
#define TRAIND_SCRIPT_READ_PACING_H_

#include <cstddef>

#include "absl/time/time.h"

namespace traind {

class ReadPacer {
 public:
  // A read that brings less than this is not a flood: no pause.
  static constexpr size_t kFloodBytes = 4096;
  // The pause lets the pipe fill to a quarter of its capacity at the rate seen between the last
  // two reads, kept within these: under a fast flood a pipe the system would not enlarge (64 KiB)
  // gets the shortest.
  static constexpr absl::Duration kShortest = absl::Milliseconds(10);
  static constexpr absl::Duration kLongest = absl::Milliseconds(50);
  // On a flood's first read (after a quiet spell the time since the last read says nothing of
  // the rate) the rate is taken to be this: 150,000 lines a second. A 64 KiB pipe then gets the
  // shortest pause and a 1 MiB pipe the longest.
  static constexpr double kFirstReadBytesPerSecond = 5e6;

  // `pipe_capacity`: the smallest of the program's pipes.
  explicit ReadPacer(size_t pipe_capacity) : pipe_capacity_(pipe_capacity) {}

  // The pause before the next read, after one at `now` that brought `bytes` (of all streams
  // together); `nearly_full`: a stream's read took half its pipe. Zero: read again at once.
  absl::Duration Next(size_t bytes, bool nearly_full, absl::Time now);
  // Whether the read Next() was last told of was a flood's.
  bool flooding() const { return previous_was_flood_; }

 private:
  const size_t pipe_capacity_;
  absl::Time previous_read_ = absl::InfinitePast();
  bool previous_was_flood_ = false;  // a rate is only known between two reads of a flood
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_READ_PACING_H_
