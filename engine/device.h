// Device names, discovery and memory readings behind one interface for cpu, cuda:N and mps.
// CUDA and MPS code is compiled only where the LibTorch found by CMake has them
// (TRAIND_HAVE_CUDA / TRAIND_HAVE_MPS_MEMORY). Thread-safe.
#ifndef TRAIND_ENGINE_DEVICE_H_
#define TRAIND_ENGINE_DEVICE_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

// "cpu", "cuda", "cuda:N", "mps" -> a device that exists here; FAILED_PRECONDITION otherwise.
// A CUDA device also becomes this process's current one.
absl::StatusOr<torch::Device> ResolveDevice(const std::string& name);

// Every device this process can use, best first (cuda:0.., mps, cpu).
trainer::v1::ListDevicesResponse DiscoverDevices();

struct MemoryReading {
  int64_t current_allocated = 0;  // CUDA allocated / MPS current / CPU RSS
  int64_t driver_allocated = 0;   // CUDA reserved / MPS driver / CPU RSS
  int64_t peak_current_allocated = 0;
  int64_t peak_driver_allocated = 0;
};
MemoryReading ReadMemory(const torch::Device& device);

// Forgets the peaks, so the next ReadMemory reports peaks from now on (CPU: resets the process's
// peak RSS through /proc/self/clear_refs).
void ResetPeakMemory(const torch::Device& device);

// Bytes a job may still allocate on the device: CUDA free memory, otherwise available RAM.
int64_t AvailableMemory(const torch::Device& device);

// Whether a LibTorch error message is an allocation failure (CUDA, MPS or CPU allocator).
bool IsOutOfMemoryMessage(const std::string& what);

// Library settings for a job on `device`. On CUDA: cuDNN autotuning (benchmark mode: the first
// convolution of each shape times cuDNN's algorithms and keeps the fastest) and the TF32 switches:
// `tf32` "on" / "off" sets both (convolutions, matrix products), "" leaves LibTorch's defaults.
// Returns what is in effect, or "" on other devices. The switches are process-wide: a worker runs
// one job.
std::string ConfigureDevice(const torch::Device& device, const std::string& tf32);

// Waits for all queued work on the device, so a clock read afterwards means something.
void Synchronize(const torch::Device& device);

// Returns cached device memory to the driver (between jobs).
void ReleaseCachedMemory(const torch::Device& device);

// Creates `device`'s context and its libraries' handles (cuBLAS, cuDNN) with a few tiny
// operations, so that what comes next does not pay for them: a warm worker calls it while it
// waits for its job, and a job calls it first to time it apart. Nothing on the CPU.
void PrepareDevice(const torch::Device& device);

}  // namespace traind

#endif  // TRAIND_ENGINE_DEVICE_H_
