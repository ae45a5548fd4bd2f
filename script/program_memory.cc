#include "script/program_memory.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/proc_file.h"
#include "common/status_macros.h"

namespace traind {

absl::Status ProgramMemory::WatchGpu() {
  ASSIGN_OR_RETURN(gpu_memory_, GpuProcessMemory::Open());
  return absl::OkStatus();
}

void ProgramMemory::WatchCpu(absl::Time start, int cores) {
  cpu_start_ = start;
  cores_ = std::max(1, cores);
}

void ProgramMemory::Sample(pid_t pid, absl::Time now) {
  if (now < next_sample_) return;
  next_sample_ = now + absl::Seconds(1);
  if (cores_ > 0) {
    // The program leads its session (ProgramProcess starts it with setsid): it and every process
    // it started that did not leave it.
    cpu_seconds_ = SessionCpuSeconds(pid);
    cpu_wall_seconds_ = absl::ToDoubleSeconds(now - cpu_start_);
    host_memory_ = ReadHostMemory();
  }
  const std::string status = absl::StrCat("/proc/", pid, "/status");
  // The program's own resident memory (its DataLoader workers are processes of their own).
  const int64_t rss = ProcKilobytes(status.c_str(), "VmRSS");
  if (rss > 0) current_rss_ = rss;
  peak_rss_ = std::max(peak_rss_, ProcKilobytes(status.c_str(), "VmHWM"));
  if (gpu_memory_ != nullptr) {
    // The program and the workers it started hold the GPU memory between them.
    const GpuProcessMemory::SessionUse use = gpu_memory_->UsedBySession(pid);
    current_driver_ = use.bytes;
    peak_driver_ = std::max(peak_driver_, current_driver_);
    if (!use.device || use.device_busy) {  // unreadable: left out rather than counted idle
      busy_sum_ += use.device_busy.value_or(0.0);
      ++busy_samples_;
    }
    if (use.device_memory) {
      device_used_ = use.device_memory->used_bytes;
      device_total_ = use.device_memory->total_bytes;
    }
  }
}

void ProgramMemory::Fill(trainer::v1::StepMetrics* step) const {
  if (cores_ > 0 && host_memory_) {
    const BusyShares::Shares shares =
        busy_shares_.AtStepReport({cpu_seconds_, cpu_wall_seconds_ * cores_});
    if (shares.run) step->set_device_busy(*shares.run);
    if (shares.training) step->set_device_busy_training(*shares.training);
    step->set_device_used_bytes(host_memory_->used_bytes);
    step->set_device_total_bytes(host_memory_->total_bytes);
  }
  if (device_total_ > 0) {
    const BusyShares::Shares shares =
        busy_shares_.AtStepReport({busy_sum_, static_cast<double>(busy_samples_)});
    if (shares.run) step->set_device_busy(*shares.run);
    if (shares.training) step->set_device_busy_training(*shares.training);
    step->set_device_used_bytes(device_used_);
    step->set_device_total_bytes(device_total_);
  }
  if (step->has_current_allocated_bytes() || step->has_driver_allocated_bytes()) return;  // its own
  if (peak_driver_ > 0) {
    // A CUDA job's memory is the GPU's: what the driver holds for it (its CUDA context
    // included). What its caching allocator has handed out is known only inside it
    // (traind.report sends torch.cuda's numbers). Until NVML has seen the program on a GPU (or
    // where it cannot: another PID namespace), its resident memory stands in.
    step->set_driver_allocated_bytes(current_driver_);
    step->set_peak_driver_allocated_bytes(peak_driver_);
  } else if (current_rss_ > 0) {  // before the first reading (once a second) it is unknown, not 0
    step->set_current_allocated_bytes(current_rss_);
    step->set_peak_current_allocated_bytes(peak_rss_);
  }
}

void ProgramMemory::AddPeaks(trainer::v1::FinalResult* result) const {
  if (peak_driver_ > 0) {
    result->set_peak_driver_allocated_bytes(
        std::max(result->peak_driver_allocated_bytes(), peak_driver_));
  } else {
    result->set_peak_current_allocated_bytes(
        std::max(result->peak_current_allocated_bytes(), peak_rss_));
  }
}

}  // namespace traind
