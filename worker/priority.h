// A worker runs below traind's CPU priority: TRAIND_WORKER_NICE (set by traind from
// --worker-nice, default 10) is added to the nice value it inherits. On busy cores the daemon's
// threads, which carry every job's events from its pipe to the store and the watchers, and a
// user's trainctl then run before training instead of queueing behind it
// (docs/benchmarks-history.md: four CPU jobs on two cores, event delivery p99 19.6 ms at the same
// priority, 11.9 ms below). On Linux a nice value belongs to a thread and is inherited by the
// threads it creates: this sets every thread the process has (LibTorch's static initialisers start
// some before main()), early in main(), and the threads started later inherit it.
#ifndef TRAIND_WORKER_PRIORITY_H_
#define TRAIND_WORKER_PRIORITY_H_

#include "absl/status/status.h"

namespace traind {

// Adds TRAIND_WORKER_NICE (0-19; unset or 0: nothing) to this thread's nice value, at most 19,
// and gives every thread of the process that value.
absl::Status LowerPriorityFromEnvironment();

// This thread's nice value.
int CurrentNice();

}  // namespace traind

#endif  // TRAIND_WORKER_PRIORITY_H_
