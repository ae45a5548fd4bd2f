#include "script/gpu_process_memory.h"

#include <optional>
#include <utility>

#include "common/proc_file.h"
#include "common/status_macros.h"

namespace traind {

absl::StatusOr<std::unique_ptr<GpuProcessMemory>> GpuProcessMemory::Open() {
  ASSIGN_OR_RETURN(std::unique_ptr<Nvml> nvml, Nvml::Open());
  return std::unique_ptr<GpuProcessMemory>(new GpuProcessMemory(std::move(nvml)));
}

GpuProcessMemory::~GpuProcessMemory() = default;

GpuProcessMemory::SessionUse GpuProcessMemory::UsedBySession(pid_t sid) const {
  SessionUse use;
  for (const Nvml::ProcessMemory& process : nvml_->ComputeProcesses()) {
    if (SessionOf(static_cast<pid_t>(process.pid)) != sid) continue;
    use.bytes += process.bytes;
    if (!use.device || process.device < *use.device) use.device = process.device;
  }
  if (use.device) {
    use.device_busy = nvml_->Busy(*use.device);
    use.device_memory = nvml_->Memory(*use.device);
  }
  return use;
}

pid_t SessionOf(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat.has_value() ? stat->session : -1;
}

}  // namespace traind
