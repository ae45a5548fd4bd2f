#include "script/gpu_process_memory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/proc_file.h"

namespace traind {

namespace {

// The part of NVML's C interface used here, as NVIDIA's nvml.h declares it (API version 12).
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
using NvmlDevice = struct NvmlDeviceOpaque*;
// nvmlProcessInfo_v2_t, what nvmlDeviceGetComputeRunningProcesses_v2 fills. Not the _v3 query:
// some drivers (R535) fill it with a longer struct (usedGpuCcProtectedMemory added), which this
// layout would misread.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NOLINT(runtime/int): the C interface's type
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
// NVML_VALUE_NOT_AVAILABLE: the driver does not say (e.g. without the rights to ask).
constexpr unsigned long long kNotAvailable = ~0ULL;  // NOLINT(runtime/int)

}  // namespace

struct GpuProcessMemory::Library {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*device_count)(unsigned int*) = nullptr;
  NvmlReturn (*device_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*compute_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;

  ~Library() {
    if (shutdown != nullptr) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
};

absl::StatusOr<std::unique_ptr<GpuProcessMemory>> GpuProcessMemory::Open() {
  auto library = std::make_unique<Library>();
  library->handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library->handle == nullptr) {
    return absl::FailedPreconditionError(
        "NVML (libnvidia-ml.so.1, part of NVIDIA's driver) is not installed");
  }
  auto find = [&](const char* name, auto* function) {
    *function =
        reinterpret_cast<std::remove_pointer_t<decltype(function)>>(dlsym(library->handle, name));
    return *function != nullptr;
  };
  NvmlReturn (*init)() = nullptr;
  if (!find("nvmlInit_v2", &init) || !find("nvmlShutdown", &library->shutdown) ||
      !find("nvmlDeviceGetCount_v2", &library->device_count) ||
      !find("nvmlDeviceGetHandleByIndex_v2", &library->device_by_index) ||
      !find("nvmlDeviceGetComputeRunningProcesses_v2", &library->compute_processes)) {
    library->shutdown = nullptr;
    return absl::FailedPreconditionError(
        "NVML is too old (no nvmlDeviceGetComputeRunningProcesses_v2: driver 450 or newer)");
  }
  if (const NvmlReturn error = init(); error != kNvmlSuccess) {
    library->shutdown = nullptr;
    return absl::FailedPreconditionError(absl::StrCat("NVML did not start (error ", error, ")"));
  }
  return std::unique_ptr<GpuProcessMemory>(new GpuProcessMemory(std::move(library)));
}

GpuProcessMemory::GpuProcessMemory(std::unique_ptr<Library> library)
    : library_(std::move(library)) {}

GpuProcessMemory::~GpuProcessMemory() = default;

int64_t GpuProcessMemory::UsedBySession(pid_t sid) const {
  unsigned int devices = 0;
  if (library_->device_count(&devices) != kNvmlSuccess) return 0;
  int64_t used = 0;
  std::vector<NvmlProcessInfo> processes(64);
  for (unsigned int index = 0; index < devices; ++index) {
    NvmlDevice device = nullptr;
    if (library_->device_by_index(index, &device) != kNvmlSuccess) continue;
    unsigned int count = static_cast<unsigned int>(processes.size());
    NvmlReturn result = library_->compute_processes(device, &count, processes.data());
    if (result == kNvmlInsufficientSize) {  // count now says how many there are
      processes.resize(count + 16);
      count = static_cast<unsigned int>(processes.size());
      result = library_->compute_processes(device, &count, processes.data());
    }
    if (result != kNvmlSuccess) continue;
    for (unsigned int i = 0; i < count && i < processes.size(); ++i) {
      const NvmlProcessInfo& process = processes[i];
      if (process.used_gpu_memory == kNotAvailable) continue;
      if (SessionOf(static_cast<pid_t>(process.pid)) != sid) continue;
      used += static_cast<int64_t>(process.used_gpu_memory);
    }
  }
  return used;
}

pid_t SessionOf(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat.has_value() ? stat->session : -1;
}

}  // namespace traind
