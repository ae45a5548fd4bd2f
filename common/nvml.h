// NVML, NVIDIA's management library, opened at run time: it comes with NVIDIA's driver, not with
// Debian's build tools, so it is dlopen'ed (libnvidia-ml.so.1) and where it is missing (no NVIDIA
// driver, macOS) Open() says so. Only the few calls traind makes are bound: the processes on a GPU
// and their memory (a program's GPU memory, script/gpu_process_memory.h), how busy a GPU is (the
// time a kernel runs, and on newer GPUs how many of its multiprocessors are busy) and
// how much of its memory is in use (a job's report of its GPU, engine/device_activity.h for a
// built-in job, script/program_memory.h for a program).
// Thread-compatible; no LibTorch, no CUDA headers.
#ifndef TRAIND_COMMON_NVML_H_
#define TRAIND_COMMON_NVML_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace traind {

class Nvml {
 public:
  // NVML opened and initialized; FAILED_PRECONDITION naming what is missing.
  static absl::StatusOr<std::unique_ptr<Nvml>> Open();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  struct ProcessMemory {
    int64_t pid = 0;          // as NVML sees it: the host's PID namespace
    int64_t bytes = 0;        // everything the driver holds for it, its CUDA context included
    unsigned int device = 0;  // the GPU it holds it on (NVML's index, for Busy and Memory)
  };
  // Every GPU's compute processes that NVML gives a memory figure for; empty when it cannot tell.
  std::vector<ProcessMemory> ComputeProcesses() const;

  // The GPU whose PCI bus id is `pci_bus_id` ("00000000:1B:00.0", as cudaDeviceGetPCIBusId
  // writes it): its index for Busy, or nullopt when NVML does not know it.
  std::optional<unsigned int> IndexOfBus(const std::string& pci_bus_id) const;
  // The share of time (0..1) one or more kernels ran on GPU `index` over NVML's last sample
  // period (1/6 s to 1 s, by GPU): any process's kernels. nullopt when it cannot tell.
  std::optional<double> Busy(unsigned int index) const;
  struct DeviceMemory {
    int64_t used_bytes = 0;  // by every process on it
    int64_t total_bytes = 0;
  };
  // GPU `index`'s memory; nullopt when NVML cannot tell.
  std::optional<DeviceMemory> Memory(unsigned int index) const;

  // A snapshot of GPU `index`'s performance counters (GPM: Hopper and newer, driver 520 or
  // newer; no special rights), freed with it. Null where the GPU or the driver has none.
  class GpmSample {
   public:
    ~GpmSample();
    GpmSample(const GpmSample&) = delete;
    GpmSample& operator=(const GpmSample&) = delete;

   private:
    friend class Nvml;
    GpmSample(void* sample, const Nvml* nvml) : sample_(sample), nvml_(nvml) {}
    void* sample_;      // nvmlGpmSample_t
    const Nvml* nvml_;  // outlives it
  };
  std::unique_ptr<GpmSample> TakeGpmSample(unsigned int index) const;
  // The share (0..1) of the GPU's multiprocessors that were busy between two of its samples,
  // averaged over that time (NVML_GPM_METRIC_SM_UTIL); nullopt when NVML cannot tell.
  std::optional<double> SmActive(const GpmSample& earlier, const GpmSample& later) const;

 private:
  struct Library;
  explicit Nvml(std::unique_ptr<Library> library);
  std::unique_ptr<Library> library_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_NVML_H_
