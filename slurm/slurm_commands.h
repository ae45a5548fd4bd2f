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
#include "common/run_command.h"

namespace traind {

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
