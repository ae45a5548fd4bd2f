// The environment a script job's program runs with: the runner's own, less every TRAIND_
// variable (traind's settings and anything secret it was given never reach a user's program),
// plus where it runs and what it may use:
//   TRAIND_DEVICE       cpu | cuda | mps: what the program should train on (torch.device(...))
//   CUDA_VISIBLE_DEVICES  the job's GPUs only ("" on the CPU, so a CPU job cannot take a GPU)
//   TRAIND_JOB_ID, TRAIND_CHECKPOINT_DIR, TRAIND_OUTPUT_DIR  (the Python package reads them)
//   OMP_NUM_THREADS, MKL_NUM_THREADS  JobSpec.threads, when given
//   TMPDIR              a temp folder of the job's own
//   PYTHONUNBUFFERED=1  so its prints arrive as they happen, not a pipe buffer later (where
//                       the traind package's python/site is found, ScriptRun replaces it with
//                       TRAIND_STDOUT_FLUSH_MS: a flush every 50 ms, not a write per line)
// and torchrun's variables for a job of several ranks (RANK, LOCAL_RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, set by traind), with LOCAL_WORLD_SIZE added.
#ifndef TRAIND_SCRIPT_SCRIPT_ENVIRONMENT_H_
#define TRAIND_SCRIPT_SCRIPT_ENVIRONMENT_H_

#include <string>
#include <vector>

#include "trainer/v1/worker.pb.h"

namespace traind {

struct ScriptDirectories {
  std::string checkpoints;
  std::string outputs;
  std::string temp;
};

// `inherited`: "NAME=value" entries (environ). `job_devices`: every device of the job, in rank
// order ("cuda:0,cuda:3": TRAIND_JOB_DEVICES, set by traind for a job on several GPUs, so that
// each rank's LOCAL_RANK indexes CUDA_VISIBLE_DEVICES as under torchrun); empty: the request's.
std::vector<std::string> ScriptEnvironment(const trainer::v1::WorkerRequest& request,
                                           const ScriptDirectories& directories,
                                           const std::vector<std::string>& inherited,
                                           const std::string& job_devices);

}  // namespace traind

#endif  // TRAIND_SCRIPT_SCRIPT_ENVIRONMENT_H_
