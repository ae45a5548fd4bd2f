// Whether a process on this machine has ended: gone, or a zombie its parent has not reaped yet
// (kill(pid, 0) still succeeds for one, so `trainctl shutdown` waited a minute for a traind that
// had stopped under a parent that reaps late, and then said it was "still answering").
#ifndef TRAIND_CLIENT_PROCESS_ENDED_H_
#define TRAIND_CLIENT_PROCESS_ENDED_H_

#include <sys/types.h>

#include <string>

namespace traind {

bool ProcessEnded(pid_t pid);

// The pid of the process listening on the Unix socket at `path`, as this process's PID namespace
// numbers it (the kernel translates SO_PEERCRED; Linux only), or 0 where it cannot say: no
// listener, another OS, or a listener in a namespace this one cannot see into. Not the pid a
// daemon reports about itself: a traind that is PID 1 of a container is some other pid here.
pid_t ListenerPid(const std::string& path);

}  // namespace traind

#endif  // TRAIND_CLIENT_PROCESS_ENDED_H_
