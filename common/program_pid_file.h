// Where a script job's runner (traind-script) notes its program's pid, so that traind can end
// what the program left when the runner itself is killed (the OOM killer, kill -9). The program
// gets SIGKILL when its runner dies (PR_SET_PDEATHSIG), but the processes it started stay in its
// process group; in the sandbox its PID namespace ends them too, unconfined nothing else would.
// The runner writes <job-dir>/program.pid (program-rankN.pid for rank N) when the program starts
// and removes it when the program has ended; traind, once the runner has exited, kills the group a
// file left behind names.
#ifndef TRAIND_COMMON_PROGRAM_PID_FILE_H_
#define TRAIND_COMMON_PROGRAM_PID_FILE_H_

#include <sys/types.h>

#include <string>

namespace traind {

std::string ProgramPidFile(const std::string& job_dir, int rank);

// The runner's side: best effort (a program whose pid is not noted is only not cleaned up after).
void WriteProgramPidFile(const std::string& job_dir, int rank, pid_t pid);
void RemoveProgramPidFile(const std::string& job_dir, int rank);

// traind's side, after the runners of `ranks` ranks have exited: SIGKILL to the process group of
// each program a file names (the program made its own session, so its pid is its group's id),
// then the file is removed. A group nobody is in any more is no one's: kill says ESRCH. Returns
// how many groups were signalled.
int KillLeftoverPrograms(const std::string& job_dir, int ranks);

}  // namespace traind

#endif  // TRAIND_COMMON_PROGRAM_PID_FILE_H_
