// How busy a job's whole GPU is, as its worker sees it: the share of the job's time so far that a
// kernel ran on the GPU (NVML's utilization, sampled every 100 ms from the job's start), and the
// memory in use of all there is (cudaMemGetInfo); every process on the GPU counted. A step report
// carries them (StepMetrics.device_busy, device_used_bytes, device_total_bytes): from a trial that
// ran alone, a search decides how many of its trials share a GPU (server/trial_packing.h). Measured
// from the job's start, not over its steps alone: what packing fills is the GPU's idle time over a
// trial's whole run (start-up, evaluation, checkpoints), where LeNet5's steps captured in a CUDA
// graph keep it busy while they run. Nothing off CUDA. Thread-safe; a worker runs one job.
#ifndef TRAIND_ENGINE_DEVICE_ACTIVITY_H_
#define TRAIND_ENGINE_DEVICE_ACTIVITY_H_

#include <torch/torch.h>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// The job on `device` starts now: a CUDA device's busy share is sampled from now on (where NVML
// answers). Nothing elsewhere, and nothing on a second call.
void StartDeviceActivity(const torch::Device& device);

// Sets `metrics`' device_busy (the mean since StartDeviceActivity, once sampled),
// device_used_bytes and device_total_bytes for a CUDA `device`; leaves them unset elsewhere.
void AddDeviceActivity(const torch::Device& device, trainer::v1::StepMetrics* metrics);

}  // namespace traind

#endif  // TRAIND_ENGINE_DEVICE_ACTIVITY_H_
