// How busy a job's whole device is, as its worker sees it, and how much of its memory is in use; a
// step report carries them (StepMetrics.device_busy, device_used_bytes, device_total_bytes): from
// a trial that ran alone, a search decides how many of its trials share a GPU or the CPU lane
// (server/trial_packing.h).
//   - CUDA: the share of the job's time so far that a kernel ran on the GPU (NVML's utilization,
//     sampled every 100 ms from the job's start), on GPUs with performance counters (GPM: Hopper
//     and newer) the share of its multiprocessors kept busy (read at each step report), and the
//     memory in use of all there is (cudaMemGetInfo); every process on the GPU counted. And the
//     share of the host's cores the worker kept busy, as on the CPU below (host_busy): packed
//     trials each need as many.
//   - CPU: the worker's CPU time since the job started over the host's usable cores' time
//     (common/cpu_threads.h UsableCores): the share of the host's cores it kept busy, whatever
//     its threads or batch shards. OpenMP's threads spin a while at the end of an operator, which
//     counts as busy: the reading errs high. Memory: the host's in use (MemTotal - MemAvailable).
// Measured from the job's start (what packing fills is the idle time over a trial's whole run:
// start-up, evaluation, checkpoints), and from its first step report on (how busy its training
// keeps the device: a trial whose training fills it is not packed, or each of its steps would
// wait for its neighbours'). Thread-safe; a worker runs one job.
#ifndef TRAIND_ENGINE_DEVICE_ACTIVITY_H_
#define TRAIND_ENGINE_DEVICE_ACTIVITY_H_

#include <torch/torch.h>

#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// The job on `device` starts now: a CUDA device's busy share is sampled from now on (where NVML
// answers; one sampler per process, on the first CUDA job's GPU), a CPU job's CPU time counts
// from now. Nothing elsewhere. A worker runs one job; a second call (tests) starts the windows
// again.
// Returns, for the job's log, why a CUDA device's busy share cannot be read ("" when it can, and
// off CUDA): a search then does not pack its trials, and the user should see why.
std::string StartDeviceActivity(const torch::Device& device);

// Sets `metrics`' device_busy (the share since StartDeviceActivity, once sampled),
// device_busy_training (since the first call, from the second on), device_sm_active(_training)
// likewise where the GPU's counters are read, host_busy(_training) on CUDA, device_used_bytes and
// device_total_bytes for a CUDA or CPU `device`; leaves them unset elsewhere. Called at each step
// report.
void AddDeviceActivity(const torch::Device& device, trainer::v1::StepMetrics* metrics);

}  // namespace traind

#endif  // TRAIND_ENGINE_DEVICE_ACTIVITY_H_
