// Whether a process on this machine has ended: gone, or a zombie its parent has not reaped yet
// (kill(pid, 0) still succeeds for one, so `trainctl shutdown` waited a minute for a traind that
// had stopped under a parent that reaps late, and then said it was "still answering").
#ifndef TRAIND_CLIENT_PROCESS_ENDED_H_
#define TRAIND_CLIENT_PROCESS_ENDED_H_

#include <sys/types.h>

namespace traind {

bool ProcessEnded(pid_t pid);

}  // namespace traind

#endif  // TRAIND_CLIENT_PROCESS_ENDED_H_
