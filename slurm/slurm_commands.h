// Slurm's command-line tools (sbatch, squeue, sacct, scontrol, scancel) run as child processes:
// argv only, never a shell, so nothing in a job's spec can become a command.
#ifndef TRAIND_SLURM_SLURM_COMMANDS_H_
#define TRAIND_SLURM_SLURM_COMMANDS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace traind {

struct CommandResult {
  int exit_code = -1;  // -1: ended by a signal
  std::string out;     // its standard output
  std::string err;     // its standard error
};
// Runs argv[0] (looked up on PATH) and collects its output; DEADLINE_EXCEEDED (the child killed)
// after `timeout`, CANCELLED (killed too) once `*stop` is true, NOT_FOUND when it cannot be
// started.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout = absl::Seconds(30),
                                         const std::atomic<bool>* stop = nullptr);

// The job id in `sbatch --parsable`'s output ("1234" or "1234;cluster").
absl::StatusOr<int64_t> ParseSbatchJobId(const std::string& out);

// A Slurm job's state as Slurm names it (PENDING, RUNNING, COMPLETING, COMPLETED, CANCELLED,
// FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...): from squeue while Slurm lists it, then from
// sacct (accounting) or scontrol (recently ended jobs). NOT_FOUND when none of them knows it.
absl::StatusOr<std::string> SlurmJobState(int64_t job_id, const std::atomic<bool>* stop = nullptr);
// The first word of a state ("CANCELLED by 0" -> CANCELLED) is one Slurm does not leave.
bool IsFinalSlurmState(const std::string& state);

}  // namespace traind

#endif  // TRAIND_SLURM_SLURM_COMMANDS_H_
