#include "common/nvml.h"

#include <dlfcn.h>

#include <type_traits>

#include "absl/strings/str_cat.h"

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
// nvmlUtilization_t: percent of the last sample period a kernel ran / memory was read or written.
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlMemory_t: a GPU's memory in bytes.
struct NvmlMemory {
  unsigned long long total;  // NOLINT(runtime/int)
  unsigned long long free;   // NOLINT(runtime/int)
  unsigned long long used;   // NOLINT(runtime/int)
};
// NVML_VALUE_NOT_AVAILABLE: the driver does not say (e.g. without the rights to ask).
constexpr unsigned long long kNotAvailable = ~0ULL;  // NOLINT(runtime/int)

}  // namespace

struct Nvml::Library {
  void* handle = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*device_count)(unsigned int*) = nullptr;
  NvmlReturn (*device_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*device_by_bus)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*device_index)(NvmlDevice, unsigned int*) = nullptr;
  NvmlReturn (*compute_processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;

  ~Library() {
    if (shutdown != nullptr) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
};

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open() {
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
      !find("nvmlDeviceGetHandleByPciBusId_v2", &library->device_by_bus) ||
      !find("nvmlDeviceGetIndex", &library->device_index) ||
      !find("nvmlDeviceGetComputeRunningProcesses_v2", &library->compute_processes) ||
      !find("nvmlDeviceGetUtilizationRates", &library->utilization) ||
      !find("nvmlDeviceGetMemoryInfo", &library->memory)) {
    library->shutdown = nullptr;
    return absl::FailedPreconditionError(
        "NVML is too old (no nvmlDeviceGetComputeRunningProcesses_v2: driver 450 or newer)");
  }
  if (const NvmlReturn error = init(); error != kNvmlSuccess) {
    library->shutdown = nullptr;
    return absl::FailedPreconditionError(absl::StrCat("NVML did not start (error ", error, ")"));
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(library)));
}

Nvml::Nvml(std::unique_ptr<Library> library) : library_(std::move(library)) {}

Nvml::~Nvml() = default;

std::vector<Nvml::ProcessMemory> Nvml::ComputeProcesses() const {
  std::vector<ProcessMemory> found;
  unsigned int devices = 0;
  if (library_->device_count(&devices) != kNvmlSuccess) return found;
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
      if (processes[i].used_gpu_memory == kNotAvailable) continue;
      found.push_back({static_cast<int64_t>(processes[i].pid),
                       static_cast<int64_t>(processes[i].used_gpu_memory), index});
    }
  }
  return found;
}

std::optional<unsigned int> Nvml::IndexOfBus(const std::string& pci_bus_id) const {
  NvmlDevice device = nullptr;
  unsigned int index = 0;
  if (library_->device_by_bus(pci_bus_id.c_str(), &device) != kNvmlSuccess ||
      library_->device_index(device, &index) != kNvmlSuccess) {
    return std::nullopt;
  }
  return index;
}

std::optional<double> Nvml::Busy(unsigned int index) const {
  NvmlDevice device = nullptr;
  NvmlUtilization utilization{};
  if (library_->device_by_index(index, &device) != kNvmlSuccess ||
      library_->utilization(device, &utilization) != kNvmlSuccess) {
    return std::nullopt;
  }
  return utilization.gpu / 100.0;
}

std::optional<Nvml::DeviceMemory> Nvml::Memory(unsigned int index) const {
  NvmlDevice device = nullptr;
  NvmlMemory memory{};
  if (library_->device_by_index(index, &device) != kNvmlSuccess ||
      library_->memory(device, &memory) != kNvmlSuccess) {
    return std::nullopt;
  }
  return DeviceMemory{static_cast<int64_t>(memory.used), static_cast<int64_t>(memory.total)};
}

}  // namespace traind
