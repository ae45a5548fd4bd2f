#include "engine/device.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/proc_file.h"
#include "engine/mixed_precision.h"

#ifdef TRAIND_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif
#ifdef TRAIND_HAVE_MPS_MEMORY
#include <ATen/detail/MPSHooksInterface.h>
#include <torch/mps.h>
#endif

namespace traind {

namespace {

bool MpsAvailable() {
#ifdef TRAIND_HAVE_MPS_MEMORY
  return torch::mps::is_available();
#else
  return false;
#endif
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto pos = line.find(':');
      if (pos != std::string::npos)
        return std::string(absl::StripAsciiWhitespace(line.substr(pos + 1)));
    }
  }
  return "cpu";
}

}  // namespace

absl::StatusOr<torch::Device> ResolveDevice(const std::string& name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "mps") {
    if (!MpsAvailable()) return absl::FailedPreconditionError("device: mps is not available here");
    return torch::Device(torch::kMPS);
  }
  if (name == "cuda" || absl::StartsWith(name, "cuda:")) {
    int index = 0;
    if (name != "cuda" && !absl::SimpleAtoi(name.substr(5), &index)) {
      return absl::InvalidArgumentError(absl::StrCat("device: bad name '", name, "'"));
    }
    const int64_t count = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
    if (index < 0 || index >= count) {
      return absl::FailedPreconditionError(
          absl::StrCat("device: ", name, " is not available here (", count, " CUDA devices)"));
    }
#ifdef TRAIND_HAVE_CUDA
    // The worker's current device from now on: kernels, streams, graphs and NCCL calls that do
    // not name a device would otherwise use cuda:0, and a rank of a multi-GPU job would create a
    // second context there.
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#endif
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return absl::InvalidArgumentError(absl::StrCat("device: unknown device '", name, "'"));
}

trainer::v1::ListDevicesResponse DiscoverDevices() {
  trainer::v1::ListDevicesResponse response;
  response.set_torch_version(
      absl::StrCat(TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH));
#ifdef TRAIND_HAVE_CUDA
  if (torch::cuda::is_available()) {
    for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i) {
      const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<int>(i));
      trainer::v1::Device* d = response.add_devices();
      d->set_name(absl::StrCat("cuda:", i));
      d->set_description(prop->name);
      d->set_capability(absl::StrCat(prop->major, ".", prop->minor));
      d->add_amp_dtypes("fp16");
      if (prop->major >= 8) d->add_amp_dtypes("bf16");
      size_t free_bytes = 0, total_bytes = 0;
      c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(i));
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        d->set_total_memory_bytes(static_cast<int64_t>(total_bytes));
        d->set_free_memory_bytes(static_cast<int64_t>(free_bytes));
      } else {
        d->set_total_memory_bytes(static_cast<int64_t>(prop->totalGlobalMem));
      }
    }
  }
#endif
  if (MpsAvailable()) {
    trainer::v1::Device* d = response.add_devices();
    d->set_name("mps");
    d->set_description("Apple Metal Performance Shaders");
    for (const std::string& amp : SupportedAmpModes(torch::Device(torch::kMPS))) {
      d->add_amp_dtypes(amp);
    }
    d->set_total_memory_bytes(ProcKilobytes("/proc/meminfo", "MemTotal"));
  }
  trainer::v1::Device* cpu = response.add_devices();
  cpu->set_name("cpu");
  cpu->set_description(absl::StrCat(CpuModelName(), ", ", sysconf(_SC_NPROCESSORS_ONLN),
                                    " threads, ", torch::get_num_threads(), " intra-op"));
  cpu->set_total_memory_bytes(ProcKilobytes("/proc/meminfo", "MemTotal"));
  cpu->set_free_memory_bytes(ProcKilobytes("/proc/meminfo", "MemAvailable"));
  for (const std::string& amp : SupportedAmpModes(torch::Device(torch::kCPU))) {
    cpu->add_amp_dtypes(amp);
  }
  return response;
}

MemoryReading ReadMemory(const torch::Device& device) {
  MemoryReading m;
#ifdef TRAIND_HAVE_CUDA
  if (device.is_cuda()) {
    using c10::cuda::CUDACachingAllocator::getDeviceStats;
    const auto stats = getDeviceStats(device.index());
    constexpr size_t kAll = 0;  // StatType::AGGREGATE
    m.current_allocated = stats.allocated_bytes[kAll].current;
    m.driver_allocated = stats.reserved_bytes[kAll].current;
    m.peak_current_allocated = stats.allocated_bytes[kAll].peak;
    m.peak_driver_allocated = stats.reserved_bytes[kAll].peak;
    return m;
  }
#endif
#ifdef TRAIND_HAVE_MPS_MEMORY
  if (device.is_mps()) {
    // Unverified on hardware: follows torch.mps.current_allocated_memory / driver_allocated_memory.
    m.current_allocated =
        static_cast<int64_t>(at::detail::getMPSHooks().getCurrentAllocatedMemory());
    m.driver_allocated = static_cast<int64_t>(at::detail::getMPSHooks().getDriverAllocatedMemory());
    m.peak_current_allocated = m.current_allocated;
    m.peak_driver_allocated = m.driver_allocated;
    return m;
  }
#endif
  (void)device;
  m.current_allocated = ProcKilobytes("/proc/self/status", "VmRSS");
  m.driver_allocated = m.current_allocated;
  m.peak_current_allocated = ProcKilobytes("/proc/self/status", "VmHWM");
  m.peak_driver_allocated = m.peak_current_allocated;
  return m;
}

void ResetPeakMemory(const torch::Device& device) {
#ifdef TRAIND_HAVE_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  (void)device;
  std::ofstream("/proc/self/clear_refs") << "5";
}

int64_t AvailableMemory(const torch::Device& device) {
#ifdef TRAIND_HAVE_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(device.index());
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      // Memory the caching allocator holds but does not use is available to this job too.
      const MemoryReading m = ReadMemory(device);
      return static_cast<int64_t>(free_bytes) + (m.driver_allocated - m.current_allocated);
    }
  }
#endif
  (void)device;
  return ProcKilobytes("/proc/meminfo", "MemAvailable");
}

bool IsOutOfMemoryMessage(const std::string& what) {
  return what.find("out of memory") != std::string::npos ||
         what.find("OutOfMemory") != std::string::npos ||
         what.find("can't allocate memory") != std::string::npos ||
         what.find("not enough memory") != std::string::npos;
}

std::string ConfigureDevice(const torch::Device& device, const std::string& tf32) {
  if (!device.is_cuda()) return "";
  at::Context& context = at::globalContext();
  context.setBenchmarkCuDNN(true);
  if (!tf32.empty()) {
    context.setAllowTF32CuDNN(tf32 == "on");
    context.setAllowTF32CuBLAS(tf32 == "on");
  }
  return absl::StrCat(device.str(), ": cuDNN autotuning on; TF32 ",
                      context.allowTF32CuDNN() ? "on" : "off", " for convolutions, ",
                      context.allowTF32CuBLAS() ? "on" : "off", " for matrix products");
}

void Synchronize(const torch::Device& device) {
#ifdef TRAIND_HAVE_CUDA
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
#endif
#ifdef TRAIND_HAVE_MPS_MEMORY
  if (device.is_mps()) torch::mps::synchronize();
#endif
  (void)device;
}

void ReleaseCachedMemory(const torch::Device& device) {
#ifdef TRAIND_HAVE_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
#ifdef TRAIND_HAVE_MPS_MEMORY
  if (device.is_mps()) at::detail::getMPSHooks().emptyCache();
#endif
  (void)device;
}

void PrepareDevice(const torch::Device& device) {
  if (!device.is_cuda() && !device.is_mps()) return;
  torch::NoGradGuard no_grad;
  const auto on = torch::TensorOptions().device(device);
  const torch::Tensor square = torch::ones({16, 16}, on);
  (void)torch::mm(square, square);  // the BLAS handle
  (void)torch::conv2d(torch::ones({1, 1, 8, 8}, on), torch::ones({1, 1, 3, 3}, on));  // cuDNN's
  Synchronize(device);
}

}  // namespace traind
