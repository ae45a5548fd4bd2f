// What traind hands sbatch for a job with backend slurm: the command line (resources from the
// JobSpec) and the batch script (srun runs traind-slurm-task once per task, each reaching back
// to the job's launcher). Pure functions.
#ifndef TRAIND_SLURM_SBATCH_SCRIPT_H_
#define TRAIND_SLURM_SBATCH_SCRIPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// sbatch's arguments before the script's path: --parsable, --job-name=`name`, --no-requeue
// (traind decides what runs again), --ntasks (the spec's processes, at least 1) and whichever of
// --nodes, --gpus-per-node (then also --ntasks-per-node, so no node gets more tasks than GPUs),
// --partition and --time the spec sets; the output to <job_dir>/slurm-<Slurm's id>.out.
std::vector<std::string> SbatchArguments(const trainer::v1::JobSpec& spec, const std::string& name,
                                         const std::string& job_dir);

struct BatchScriptParts {
  std::string task_path;  // traind-slurm-task, at the same path on every node
  std::string connect;    // host:port of the job's launcher
  std::string secret;     // the job's secret (hex)
};
// The script, or INVALID_ARGUMENT when a part holds what a shell script cannot quote safely
// (a single quote, a newline).
absl::StatusOr<std::string> BatchScript(int64_t job_id, const BatchScriptParts& parts);

}  // namespace traind

#endif  // TRAIND_SLURM_SBATCH_SCRIPT_H_
