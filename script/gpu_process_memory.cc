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

int64_t GpuProcessMemory::UsedBySession(pid_t sid) const {
  int64_t used = 0;
  for (const Nvml::ProcessMemory& process : nvml_->ComputeProcesses()) {
    if (SessionOf(static_cast<pid_t>(process.pid)) == sid) used += process.bytes;
  }
  return used;
}

pid_t SessionOf(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat.has_value() ? stat->session : -1;
}

}  // namespace traind
