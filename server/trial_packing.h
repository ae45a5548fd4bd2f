// Packing a search's small trials onto one GPU, or onto the CPU lane: how many of its trials run
// there at once (separate worker processes), decided from what a trial measured while it ran
// alone, never from a fixed guess.
//   - A GPU runs one process's kernels at a time (contexts are time-sliced), so trials gain from
//     sharing the time the GPU sits idle: while a trial launches its small kernels, starts,
//     evaluates or writes a checkpoint. A trial that kept the GPU busy a share `b` of the time
//     leaves room for about 0.9 / b of them (0.9: not to the last cycle). A trial that fills the
//     GPU (ResNet-18 at batch 256: b near 1) runs alone.
//   - Side by side: through traind's MPS daemon (server/mps_control.h) packed trials' kernels run
//     at the same time on different multiprocessors. Then what bounds them is how much of the
//     GPU a trial's kernels filled, not how long they ran: the share `s` of the multiprocessors
//     a trial kept busy (NVML's GPM counters, Hopper and newer) lets 0.9 / s of them run, by its
//     run and by its training. A LeNet5 trial whose CUDA-graph training keeps a kernel running
//     68% of the time fills a few percent of an H100's multiprocessors. Where the counters are
//     not read (older GPUs), the time share bounds them as above.
//   - The CPU: packed trials divide the host's cores among them (WorkerRequest.cpu_sharers). A
//     trial that kept a share `b` of the cores busy alone leaves the rest idle, and 1 / b trials
//     with 1 / b of the cores each would keep them busy. Only whole ones: w <= 1 / b. Packing
//     more, where a trial's own parallel work is slowed by the cores it gives up, lost: on 2
//     cores, two 1-epoch LeNet5 trials at a time (b 0.65: start-up on one thread, training on
//     two batch shards) ran at 0.72x the speed of one at a time, and MLP (b 0.58) at 1.02x
//     (docs/benchmarks.md). A reading counts OpenMP's spinning threads as busy: it errs high.
//   - Its training alone: the trials' steps share the device too. A trial whose training kept it
//     busy a share `t` (from its first step report on, start-up left out) lets 0.9 / t train at
//     once on a GPU (1 / t on the CPU) before each step waits for its neighbours'. A trial whose
//     training fills the device (ResNet-18 at batch 256 at 224 px) is never packed, however
//     short its run and so however idle its start-up left the device. Nor is one whose
//     training was too short to read (a single step report).
//   - Memory: the device's memory in use while it ran alone (a GPU: its CUDA context, its tensors
//     and the allocator's cache; the CPU: the host's), plus whatever else was there (the estimate
//     errs high), fits 0.9 of the memory that many times. Of it, the trial's own reservation is
//     scaled up to the largest batch a trial may draw; the rest (a CUDA context and library
//     handles: most of a LeNet5 trial's 2 GiB) is counted once per trial, as is.
//   - Host cores: on a GPU each trial's worker launches its kernels from a host thread that a
//     launch-bound trial keeps busy, and its start-up (data, model, the CUDA graph's capture)
//     and other threads take more: as many cores as its worker kept busy alone (at least one)
//     per trial, one left to traind (a program's trial on a GPU is not read: one core each). On an
//     H100 host of 16 cores a LeNet5 trial's worker kept 1.5-1.7 busy, an MLP's 2.2-2.4; packed, a
//     trial's start-up is what slows most (0.4-0.6 s to its first step alone, 1.1-1.3 s packed
//     6-8 at once). On the CPU each trial takes at least one core. Every lane (each GPU, each of
//     --slots cpu=N) packs the width, so the cores are divided among the lanes first.
//   - The user's cap (SearchSpec.max_pack); 1 turns packing off.
// Pure; the search driver gathers the measurements (server/search_driver.cc).
#ifndef TRAIND_SERVER_TRIAL_PACKING_H_
#define TRAIND_SERVER_TRIAL_PACKING_H_

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// A trial's device (a GPU, or the host's cores) measured while it ran alone on it.
struct AloneFootprint {
  double busy = 0;         // StepMetrics.device_busy: 0..1, over the trial's run
  int64_t used_bytes = 0;  // StepMetrics.device_used_bytes
  int64_t total_bytes = 0;
  int64_t batch_size = 0;  // the trial's
  // The part of used_bytes that grows with the batch: the trial's own peak reservation
  // (StepMetrics.peak_driver_allocated_bytes: CUDA's caching allocator; a program's, what it or
  // NVML said). The rest (its CUDA context, the libraries' handles, anything else on the device)
  // does not. 0: all of used_bytes counts as growing.
  int64_t batch_bytes = 0;
  // StepMetrics.device_busy_training: while it trained, its start-up left out (unset: one step
  // report only).
  std::optional<double> busy_training;
  // StepMetrics.device_sm_active(_training): the share of the GPU's multiprocessors busy (unset:
  // not read there).
  std::optional<double> sm_active;
  std::optional<double> sm_active_training;
  // A GPU trial's: the share of the host's cores its worker kept busy over its run and while it
  // trained (StepMetrics.host_busy, host_busy_training; unset: not read). The larger bounds it:
  // packed trials start and train at once. Read alone, with all of the host's threads; packed, a
  // trial gets its share of them, so the reading errs high.
  std::optional<double> host_busy;
  std::optional<double> host_busy_training;
};

// Where a packed search's trials run: programs (traind-script; no waiting worker serves them), or
// traind-worker on the CPU or on a GPU (as many kept started and waiting; on a GPU started as its
// trials connect: server/job_launcher.h).
enum class PackedTrials { kPrograms, kWorkersOnCpu, kWorkersOnGpu };

struct PackingFacts {
  bool on_cpu = false;  // the CPU lane's trials, else a GPU's
  int max_pack = 0;     // SearchSpec.max_pack; 0: no cap of the user's
  int host_cores = 1;
  // The lanes the search's trials spread over (DevicePlan::Lanes: its GPUs, or traind --slots
  // cpu=N): each packs the width, and all of them share the host's cores.
  int lanes = 1;
  // A GPU's packed trials run side by side through traind's MPS daemon (server/mps_control.h):
  // where the multiprocessors' share was read, it bounds them instead of the time a kernel ran.
  bool side_by_side = false;
  int64_t largest_batch = 0;  // the largest batch size a trial may draw; 0: the measured one's
  std::optional<AloneFootprint> alone;  // nothing measured yet
};

struct Packing {
  int width = 1;    // trials at once on one GPU (or on the CPU)
  std::string why;  // for the report; "" while nothing is measured
  // Several at once on a GPU, side by side through MPS: such a width holds only while traind
  // runs MPS.
  bool side_by_side = false;
};

// The most trials traind puts on one GPU or the CPU, whatever was measured.
inline constexpr int kMaxPack = 32;

Packing DecidePacking(const PackingFacts& facts);

// A trial's run read as a measurement taken alone: a trial that ended its run (SUCCEEDED, or PAUSED
// at its rung) on CUDA or the CPU, whose last step report says how busy its device was from the
// run's start to that step and how much of its memory was in use. nullopt otherwise (still running:
// its share so far would count its idle start-up too heavily, and a trial that fills the GPU once
// its steps run would look small).
std::optional<AloneFootprint> AloneReading(const trainer::v1::Job& trial);

// The larger of two readings, field by field (several readings: the busiest and fullest count).
AloneFootprint Larger(const AloneFootprint& a, const AloneFootprint& b);

}  // namespace traind

#endif  // TRAIND_SERVER_TRIAL_PACKING_H_
