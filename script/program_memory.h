// ProgramMemory: a running program's memory as traind samples it from outside, once a second: its
// resident memory (/proc), and for a CUDA job what the driver holds for its processes (NVML).
// Steps the program did not give memory figures to (traind.report does) get these, and the
// result its peaks. A CUDA job's steps also carry its GPU's busy share since the program started
// and that GPU's memory in use (StepMetrics.device_busy, device_used_bytes, device_total_bytes),
// as a built-in job's do: from a trial that ran alone a search decides how many of its trials
// share a GPU (server/trial_packing.h). A CPU job's steps carry the share of the host's usable
// cores its session's processes kept busy since it started (their CPU time over the cores' time)
// and the host's memory in use, so a search packs a program's CPU trials as it does a built-in
// job's. Not thread-safe: traind-script's one thread drives it.
#ifndef TRAIND_SCRIPT_PROGRAM_MEMORY_H_
#define TRAIND_SCRIPT_PROGRAM_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/busy_shares.h"
#include "common/proc_file.h"
#include "script/gpu_process_memory.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class ProgramMemory {
 public:
  // Samples GPU memory too (NVML); an error says why it cannot, and only resident memory is
  // sampled.
  absl::Status WatchGpu();
  // Samples the CPU time of the program's session from `start` on, against `cores` usable cores.
  void WatchCpu(absl::Time start, int cores);
  // At most once a second: `pid` is the program, its session's leader (ProgramProcess starts it
  // with setsid).
  void Sample(pid_t pid, absl::Time now);
  // Fills the memory of a step that gave none of its own.
  void Fill(trainer::v1::StepMetrics* step) const;
  // The peaks, into a result that may hold the program's own (the larger stays).
  void AddPeaks(trainer::v1::FinalResult* result) const;

 private:
  // Null for other devices than CUDA or where NVML is missing.
  std::unique_ptr<GpuProcessMemory> gpu_memory_;
  int64_t current_rss_ = 0;
  int64_t peak_rss_ = 0;
  int64_t current_driver_ = 0;
  int64_t peak_driver_ = 0;
  // The GPU's busy share summed over every sample since WatchGpu, a sample taken before the
  // program held memory on a GPU counting 0 (it launched nothing there yet).
  double busy_sum_ = 0;
  int64_t busy_samples_ = 0;
  // The shares a step report carries; Fill's first call marks where the steps begin.
  mutable BusyShares busy_shares_;
  // A CPU job's: when it started, the cores it may use, its session's CPU seconds and the time at
  // the last sample (cores 0: not watched).
  absl::Time cpu_start_;
  int cores_ = 0;
  double cpu_seconds_ = 0;
  double cpu_wall_seconds_ = 0;
  std::optional<HostMemory> host_memory_;
  int64_t device_used_ = 0;
  int64_t device_total_ = 0;
  absl::Time next_sample_ = absl::InfinitePast();
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_PROGRAM_MEMORY_H_
