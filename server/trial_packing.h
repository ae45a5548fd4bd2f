// Packing a search's small trials onto one GPU: how many of its trials share a GPU at once
// (separate worker processes), decided from what a trial measured while it ran alone, never from a
// fixed guess.
//   - A GPU runs one process's kernels at a time (contexts are time-sliced), so trials gain from
//     sharing only the time the GPU sits idle: while a trial launches its small kernels, starts,
//     evaluates or writes a checkpoint. A trial that kept the GPU busy a share `b` of the time
//     leaves room for about 0.9 / b of them (0.9: not to the last cycle). A trial that fills the
//     GPU (ResNet-18 at batch 256: b near 1) runs alone.
//   - Memory: the GPU's memory in use while it ran alone (its CUDA context, its tensors and the
//     allocator's cache, plus whatever else was there: the estimate errs high), scaled up to the
//     largest batch a trial may draw, fits 0.9 of the GPU's memory that many times.
//   - Host cores: each trial's worker launches its kernels from a host thread that a launch-bound
//     trial keeps busy: at most one trial per host core, one left to traind.
//   - The user's cap (SearchSpec.max_pack); 1 turns packing off.
// Pure; the search driver gathers the measurements (server/search_driver.cc).
#ifndef TRAIND_SERVER_TRIAL_PACKING_H_
#define TRAIND_SERVER_TRIAL_PACKING_H_

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// A trial's GPU measured while it ran alone on it.
struct AloneFootprint {
  double busy = 0;         // StepMetrics.device_busy: 0..1, over the trial's run
  int64_t used_bytes = 0;  // StepMetrics.device_used_bytes
  int64_t total_bytes = 0;
  int64_t batch_size = 0;  // the trial's
};

struct PackingFacts {
  int max_pack = 0;  // SearchSpec.max_pack; 0: no cap of the user's
  int host_cores = 1;
  int64_t largest_batch = 0;  // the largest batch size a trial may draw; 0: the measured one's
  std::optional<AloneFootprint> alone;  // nothing measured yet
};

struct Packing {
  int width = 1;    // trials at once on one GPU
  std::string why;  // for the report; "" while nothing is measured
};

// The most trials traind puts on one GPU, whatever was measured.
inline constexpr int kMaxPack = 32;

Packing DecidePacking(const PackingFacts& facts);

// A trial's run read as a measurement taken alone: a trial that ended its run (SUCCEEDED, or PAUSED
// at its rung) on CUDA, whose last step report says how busy the GPU was from the run's start to
// that step and how much of its memory was in use. nullopt otherwise (still running: its share so
// far would count its idle start-up too heavily, and a trial that fills the GPU once its steps
// run would look small).
std::optional<AloneFootprint> AloneReading(const trainer::v1::Job& trial);

// The larger of two readings, field by field (several readings: the busiest and fullest count).
AloneFootprint Larger(const AloneFootprint& a, const AloneFootprint& b);

}  // namespace traind

#endif  // TRAIND_SERVER_TRIAL_PACKING_H_
