// What a training job sets for its whole process rather than on its own objects: LibTorch's
// global context (cuDNN autotuning and determinism, TF32) and its intra-op thread count. A worker
// that serves one job after another (WorkerRequest.serve_another) takes them before its first job
// and puts them back after each, so that the next job starts from what a fresh worker has (the
// memory a job's tensors left cached on its device is released by RunTrainingJob itself).
// Not put back: cuDNN's autotuned algorithms (a later job with the same shapes skips the tuning
// and may take another of the algorithms a fresh worker might also have chosen), and what the
// device's libraries read once (CUBLAS_WORKSPACE_CONFIG: deterministic jobs are never served
// after another, server/job_launcher.h).
#ifndef TRAIND_ENGINE_JOB_GLOBALS_H_
#define TRAIND_ENGINE_JOB_GLOBALS_H_

namespace traind {

struct JobGlobals {
  bool benchmark_cudnn = false;
  bool deterministic_cudnn = false;
  bool deterministic_algorithms = false;
  bool deterministic_warn_only = false;
  bool allow_tf32_cudnn = false;
  bool allow_tf32_cublas = false;
  int intra_op_threads = 1;

  bool operator==(const JobGlobals& other) const;
  bool operator!=(const JobGlobals& other) const { return !(*this == other); }
};

JobGlobals CaptureJobGlobals();
// Puts `globals` back. A worker compares CaptureJobGlobals() with them after: one that could not
// put them all back serves no other job.
void RestoreJobGlobals(const JobGlobals& globals);

}  // namespace traind

#endif  // TRAIND_ENGINE_JOB_GLOBALS_H_
