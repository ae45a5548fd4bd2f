// How much GPU memory the CUDA driver holds for a program's processes, as NVML reports it
// (nvmlDeviceGetComputeRunningProcesses over every GPU): everything the driver gave them, the CUDA
// context included, so more than PyTorch's memory_reserved. A program's "driver allocated" memory
// measured from outside, so a CUDA script's memory curve needs no code in it. NVML (common/nvml.h)
// is opened at run time; where it is missing Open() says so and nothing is sampled. A process seen
// through another PID namespace (a container that does not share the host's) has a pid NVML does
// not report; its memory reads as unknown (0). Thread-compatible; no LibTorch, no CUDA headers.
#ifndef TRAIND_SCRIPT_GPU_PROCESS_MEMORY_H_
#define TRAIND_SCRIPT_GPU_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "common/nvml.h"

namespace traind {

class GpuProcessMemory {
 public:
  // NVML opened and initialized; FAILED_PRECONDITION naming what is missing.
  static absl::StatusOr<std::unique_ptr<GpuProcessMemory>> Open();
  ~GpuProcessMemory();
  GpuProcessMemory(const GpuProcessMemory&) = delete;
  GpuProcessMemory& operator=(const GpuProcessMemory&) = delete;

  struct SessionUse {
    // Bytes the driver holds for the session's processes, summed over every GPU; 0 when none of
    // them uses one (yet) or NVML cannot tell.
    int64_t bytes = 0;
    // The GPU they hold memory on (the first, by NVML's index), once seen on one; and how busy
    // it was over NVML's last sample period and how much of its memory is in use (every
    // process's counted, as engine/device_activity.h reports a built-in job's GPU).
    std::optional<unsigned int> device;
    std::optional<double> device_busy;
    std::optional<Nvml::DeviceMemory> device_memory;
  };
  // What the processes of session `sid` (the program, which ProgramProcess starts with setsid,
  // and every process it started that stayed in its session) hold of the GPUs. Only the few
  // processes NVML names are looked up in /proc.
  SessionUse UsedBySession(pid_t sid) const;

 private:
  explicit GpuProcessMemory(std::unique_ptr<Nvml> nvml) : nvml_(std::move(nvml)) {}
  std::unique_ptr<Nvml> nvml_;
};

// The session `pid` belongs to (/proc/PID/stat), or -1 when it is gone or unreadable.
pid_t SessionOf(pid_t pid);

}  // namespace traind

#endif  // TRAIND_SCRIPT_GPU_PROCESS_MEMORY_H_
