#include "common/nvml.h"

#include <dlfcn.h>

#include <algorithm>
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
// GPM (nvml.h's nvmlGpm* types, version 1 of each).
using NvmlGpmSample = struct NvmlGpmSampleOpaque*;
struct NvmlGpmSupport {
  unsigned int version;
  unsigned int is_supported_device;
};
struct NvmlGpmMetric {
  unsigned int metric_id;
  NvmlReturn nvml_return;
  double value;
  const char* short_name;
  const char* long_name;
  const char* unit;
};
// nvmlGpmMetricsGet_t: NVML fills the first num_metrics of `metrics`; its own header's array is
// longer in newer versions, so this one is longer than any (the library never writes past
// num_metrics, but a larger buffer costs nothing).
struct NvmlGpmMetricsGet {
  unsigned int version;
  unsigned int num_metrics;
  NvmlGpmSample sample1;
  NvmlGpmSample sample2;
  NvmlGpmMetric metrics[512];
};
constexpr unsigned int kGpmVersion = 1;
constexpr unsigned int kGpmSmUtil = 2;  // NVML_GPM_METRIC_SM_UTIL: percent of SMs busy

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
  // Absent from drivers before 520: then no GPM.
  NvmlReturn (*gpm_support)(NvmlDevice, NvmlGpmSupport*) = nullptr;
  NvmlReturn (*gpm_alloc)(NvmlGpmSample*) = nullptr;
  NvmlReturn (*gpm_free)(NvmlGpmSample) = nullptr;
  NvmlReturn (*gpm_sample)(NvmlDevice, NvmlGpmSample) = nullptr;
  NvmlReturn (*gpm_metrics)(NvmlGpmMetricsGet*) = nullptr;

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
  if (!find("nvmlGpmQueryDeviceSupport", &library->gpm_support) ||
      !find("nvmlGpmSampleAlloc", &library->gpm_alloc) ||
      !find("nvmlGpmSampleFree", &library->gpm_free) ||
      !find("nvmlGpmSampleGet", &library->gpm_sample) ||
      !find("nvmlGpmMetricsGet", &library->gpm_metrics)) {
    library->gpm_support = nullptr;  // all or none
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

Nvml::GpmSample::~GpmSample() { nvml_->library_->gpm_free(static_cast<NvmlGpmSample>(sample_)); }

std::unique_ptr<Nvml::GpmSample> Nvml::TakeGpmSample(unsigned int index) const {
  if (library_->gpm_support == nullptr) return nullptr;
  NvmlDevice device = nullptr;
  NvmlGpmSupport support{kGpmVersion, 0};
  if (library_->device_by_index(index, &device) != kNvmlSuccess ||
      library_->gpm_support(device, &support) != kNvmlSuccess || !support.is_supported_device) {
    return nullptr;
  }
  NvmlGpmSample sample = nullptr;
  if (library_->gpm_alloc(&sample) != kNvmlSuccess) return nullptr;
  std::unique_ptr<GpmSample> taken(new GpmSample(sample, this));
  if (library_->gpm_sample(device, sample) != kNvmlSuccess) return nullptr;
  return taken;
}

std::optional<double> Nvml::SmActive(const GpmSample& earlier, const GpmSample& later) const {
  if (library_->gpm_metrics == nullptr) return std::nullopt;
  auto get = std::make_unique<NvmlGpmMetricsGet>();  // 20 KB: not on the stack
  get->version = kGpmVersion;
  get->num_metrics = 1;
  get->sample1 = static_cast<NvmlGpmSample>(earlier.sample_);
  get->sample2 = static_cast<NvmlGpmSample>(later.sample_);
  get->metrics[0].metric_id = kGpmSmUtil;
  if (library_->gpm_metrics(get.get()) != kNvmlSuccess ||
      get->metrics[0].nvml_return != kNvmlSuccess) {
    return std::nullopt;
  }
  return std::clamp(get->metrics[0].value / 100.0, 0.0, 1.0);
}

}  // namespace traind
