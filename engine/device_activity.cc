#include "engine/device_activity.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/busy_shares.h"
#include "common/cpu_threads.h"
#include "common/proc_file.h"

#ifdef TRAIND_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include "common/nvml.h"
#endif

namespace traind {

namespace {

using Clock = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Sets a step report's pair of shares.
void SetShares(const BusyShares::Shares& shares, void (trainer::v1::StepMetrics::*set_run)(double),
               void (trainer::v1::StepMetrics::*set_training)(double),
               trainer::v1::StepMetrics* metrics) {
  if (shares.run) (metrics->*set_run)(*shares.run);
  if (shares.training) (metrics->*set_training)(*shares.training);
}

// A CPU job's start: this process's CPU time and the clock then, and the cores it may use.
struct CpuStart {
  double cpu_seconds = 0;
  Clock::time_point wall;
  int cores = 1;
  BusyShares shares;
};

std::mutex cpu_mutex;
std::optional<CpuStart> cpu_start;  // the job's, from StartDeviceActivity

void StartCpuActivity() {
  std::lock_guard<std::mutex> lock(cpu_mutex);
  cpu_start =
      CpuStart{ProcessCpuSeconds(), Clock::now(), std::max(1, UsableCores(ReadCpuFacts())), {}};
}

// The share of the host's cores this process kept busy since StartCpuActivity, set through the
// pair of setters: a CPU job's device_busy, a CUDA job's host_busy. False before the start.
bool AddCpuShares(void (trainer::v1::StepMetrics::*set_run)(double),
                  void (trainer::v1::StepMetrics::*set_training)(double),
                  trainer::v1::StepMetrics* metrics) {
  std::lock_guard<std::mutex> lock(cpu_mutex);
  if (!cpu_start) return false;
  const double wall = std::chrono::duration<double>(Clock::now() - cpu_start->wall).count();
  SetShares(cpu_start->shares.AtStepReport(
                {ProcessCpuSeconds() - cpu_start->cpu_seconds, wall * cpu_start->cores}),
            set_run, set_training, metrics);
  return true;
}

void AddCpuActivity(trainer::v1::StepMetrics* metrics) {
  if (!AddCpuShares(&trainer::v1::StepMetrics::set_device_busy,
                    &trainer::v1::StepMetrics::set_device_busy_training, metrics)) {
    return;
  }
  if (const std::optional<HostMemory> memory = ReadHostMemory()) {
    metrics->set_device_used_bytes(memory->used_bytes);
    metrics->set_device_total_bytes(memory->total_bytes);
  }
}

}  // namespace

#ifdef TRAIND_HAVE_CUDA
namespace {

// NVML's readings of one GPU every 100 ms on a thread of its own, summed.
class BusySampler {
 public:
  // NVML's index of CUDA device `cuda_index` (the orders may differ: CUDA's puts the fastest
  // first), matched by PCI bus id; no thread without NVML.
  explicit BusySampler(int cuda_index) {
    absl::StatusOr<std::unique_ptr<Nvml>> nvml = Nvml::Open();
    if (!nvml.ok()) {
      why_not_ = std::string(nvml.status().message());
      return;
    }
    nvml_ = std::move(*nvml);
    char bus[32] = {};
    if (const cudaError_t error = cudaDeviceGetPCIBusId(bus, sizeof(bus), cuda_index);
        error != cudaSuccess) {
      why_not_ = absl::StrCat("cudaDeviceGetPCIBusId: ", cudaGetErrorString(error));
      return;
    }
    const std::optional<unsigned int> index = nvml_->IndexOfBus(bus);
    if (!index) {
      why_not_ = absl::StrCat("NVML does not know the GPU at PCI bus ", bus);
      return;
    }
    if (!nvml_->Busy(*index)) {
      why_not_ = absl::StrCat("NVML does not tell GPU ", *index, "'s utilization");
      return;
    }
    index_ = *index;
    thread_ = std::thread([this, index = *index] { Sample(index); });
  }
  ~BusySampler() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // Why nothing is sampled; "" while it is.
  const std::string& why_not() const { return why_not_; }

  // The samples so far: their busy fractions summed, over their count.
  BusyTotals Totals() const {
    return {static_cast<double>(busy_percent_.load()) / 100.0,
            static_cast<double>(samples_.load())};
  }

  // The GPU's busy multiprocessors since the first call, as multiprocessor-share-seconds over
  // seconds: each call reads the counters since the one before (GPM). nullopt on a GPU without
  // them. Called at each step report (under sampler_mutex), not by the sampling thread: the
  // counters need no sampling between two reads.
  std::optional<BusyTotals> SmTotals() {
    if (!nvml_ || !index_ || gpm_unavailable_) return std::nullopt;
    std::unique_ptr<Nvml::GpmSample> now = nvml_->TakeGpmSample(*index_);
    const Clock::time_point at = Clock::now();
    if (now == nullptr) {
      gpm_unavailable_ = true;
      return std::nullopt;
    }
    if (last_gpm_ != nullptr) {
      const double seconds = std::chrono::duration<double>(at - last_gpm_at_).count();
      if (std::optional<double> active = nvml_->SmActive(*last_gpm_, *now)) {
        sm_totals_.busy += *active * seconds;
        sm_totals_.of += seconds;
      }
    }
    last_gpm_ = std::move(now);
    last_gpm_at_ = at;
    return sm_totals_;
  }

 private:
  void Sample(unsigned int index) {
    while (!stop_) {
      if (std::optional<double> busy = nvml_->Busy(index)) {
        busy_percent_ += static_cast<int64_t>(*busy * 100.0 + 0.5);
        ++samples_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::unique_ptr<Nvml> nvml_;
  std::optional<unsigned int> index_;  // NVML's, once known
  std::string why_not_;
  bool gpm_unavailable_ = false;
  std::unique_ptr<Nvml::GpmSample> last_gpm_;
  Clock::time_point last_gpm_at_;
  BusyTotals sm_totals_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> busy_percent_{0};
  std::atomic<int64_t> samples_{0};
  std::thread thread_;
};

std::mutex sampler_mutex;
std::unique_ptr<BusySampler> sampler;  // the process's first CUDA job's, from StartDeviceActivity
BusyTotals gpu_start;                  // its totals when this job started
BusyShares gpu_shares;                 // this job's, of its samples since
std::optional<BusyTotals> sm_start;    // its multiprocessors' totals when this job started
BusyShares sm_shares;                  // this job's, since

}  // namespace
#endif

std::string StartDeviceActivity(const torch::Device& device) {
  if (device.is_cpu()) {
    StartCpuActivity();
    return "";
  }
#ifdef TRAIND_HAVE_CUDA
  if (!device.is_cuda()) return "";
  StartCpuActivity();  // the host's cores its launches keep busy (host_busy)
  std::lock_guard<std::mutex> lock(sampler_mutex);
  gpu_shares = BusyShares();
  sm_shares = BusyShares();
  if (sampler) {  // an earlier job's in this process (tests): this job's window starts now
    gpu_start = sampler->Totals();
    sm_start = sampler->SmTotals();
    return "";
  }
  sampler = std::make_unique<BusySampler>(device.has_index() ? device.index() : 0);
  sm_start = sampler->SmTotals();
  if (sampler->why_not().empty()) return "";
  return absl::StrCat("GPU busy share unread (", sampler->why_not(),
                      "): a search does not pack its trials on this GPU");
#else
  return "";
#endif
}

void AddDeviceActivity(const torch::Device& device, trainer::v1::StepMetrics* metrics) {
  if (device.is_cpu()) {
    AddCpuActivity(metrics);
    return;
  }
#ifdef TRAIND_HAVE_CUDA
  if (!device.is_cuda()) return;
  AddCpuShares(&trainer::v1::StepMetrics::set_host_busy,
               &trainer::v1::StepMetrics::set_host_busy_training, metrics);
  {
    std::lock_guard<std::mutex> lock(sampler_mutex);
    if (sampler) {
      const BusyTotals now = sampler->Totals();
      SetShares(gpu_shares.AtStepReport({now.busy - gpu_start.busy, now.of - gpu_start.of}),
                &trainer::v1::StepMetrics::set_device_busy,
                &trainer::v1::StepMetrics::set_device_busy_training, metrics);
      if (const std::optional<BusyTotals> sm = sampler->SmTotals(); sm && sm_start) {
        SetShares(sm_shares.AtStepReport({sm->busy - sm_start->busy, sm->of - sm_start->of}),
                  &trainer::v1::StepMetrics::set_device_sm_active,
                  &trainer::v1::StepMetrics::set_device_sm_active_training, metrics);
      }
    }
  }
  c10::cuda::CUDAGuard guard(
      static_cast<c10::DeviceIndex>(device.has_index() ? device.index() : 0));
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    metrics->set_device_used_bytes(static_cast<int64_t>(total_bytes - free_bytes));
    metrics->set_device_total_bytes(static_cast<int64_t>(total_bytes));
  }
#else
  (void)device;
  (void)metrics;
#endif
}

}  // namespace traind
