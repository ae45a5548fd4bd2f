#include "server/trial_packing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace traind {

namespace {

// The share of a GPU's time (and of any device's memory) packed trials may fill together.
constexpr double kTarget = 0.9;
// The share of the host's cores packed CPU trials may keep busy together: all of them (a reading
// counts spinning threads as busy, so it errs high already).
constexpr double kCpuTarget = 1.0;
// A reading of a GPU "busy 0%" (between NVML's samples) counts as this much: the bound stays
// finite.
constexpr double kLeastBusy = 0.02;

std::string GiB(int64_t bytes) { return absl::StrFormat("%.1f", bytes / double(1LL << 30)); }

}  // namespace

namespace {

struct Bound {
  int width;
  std::string name;
};

// Whether the multiprocessors' share bounds a GPU's trials rather than the time a kernel ran: they
// run side by side (MPS) and the GPU's counters were read while the trial trained alone.
bool BySmShare(const PackingFacts& facts) {
  return !facts.on_cpu && facts.side_by_side && facts.alone->sm_active &&
         facts.alone->sm_active_training;
}

// The bounds from how busy a trial kept its device alone, by its training and by its run. Taking
// turns on a GPU, what counts is the time a kernel ran; side by side, how much of the GPU its
// kernels filled; on the CPU, the share of the cores it kept busy.
std::vector<Bound> BusyBounds(const PackingFacts& facts) {
  const AloneFootprint& alone = *facts.alone;
  const double target = facts.on_cpu ? kCpuTarget : kTarget;
  // A CPU trial alone had its lane's share of the cores (traind --slots cpu=N divides them): what
  // it kept busy of the host, it kept busy of its lane `lanes` times over.
  const double lane_scale = facts.on_cpu ? std::max(1, facts.lanes) : 1.0;
  auto width = [&](double share) {
    return static_cast<int>(
        std::floor(target / std::max(std::min(1.0, share * lane_scale), kLeastBusy)));
  };
  const bool by_sm = BySmShare(facts);
  const double run = by_sm ? *alone.sm_active : alone.busy;
  const std::optional<double> training = by_sm ? alone.sm_active_training : alone.busy_training;
  const std::string what = by_sm ? "its share of the multiprocessors" : "its busy share";
  // Unread (one step report: its training too short to tell), it may fill the device: alone.
  // On a tie the training names the bound: what packing would cost the trial's steps.
  return {{width(training.value_or(1.0)),
           training ? what + " while training" : "its training, too short to measure"},
          {width(run), what}};
}

// The host's cores one trial needs: on a GPU, as many as its worker kept busy alone, at least one
// (its launching thread); on the CPU, one at least (packed trials divide the cores).
double CoresPerTrial(const PackingFacts& facts) {
  if (facts.on_cpu || !facts.alone) return 1.0;
  const double busy =
      std::max(facts.alone->host_busy.value_or(0), facts.alone->host_busy_training.value_or(0));
  return std::max(1.0, busy * facts.host_cores);
}

// The memory one trial needs at the largest batch: what grows with the batch scaled, the rest
// as it was.
double MemoryPerTrial(const AloneFootprint& alone, double batch_scale) {
  const int64_t growing =
      alone.batch_bytes > 0 ? std::min(alone.batch_bytes, alone.used_bytes) : alone.used_bytes;
  return static_cast<double>(alone.used_bytes - growing) +
         static_cast<double>(growing) * batch_scale;
}

// " (0.4 GiB its own, batch 64)": what of the memory in use grows with the batch, and the batch.
std::string MemoryNote(const AloneFootprint& alone) {
  std::vector<std::string> parts;
  if (alone.batch_bytes > 0) parts.push_back(absl::StrCat(GiB(alone.batch_bytes), " GiB its own"));
  if (alone.batch_size > 0) parts.push_back(absl::StrCat("batch ", alone.batch_size));
  return parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

// "alone a trial kept the GPU busy 48% of the time (68% while training), its multiprocessors 3%
// (5% while training), its worker 1.2 host cores with 2.3 of 79.2 GiB in use (0.4 GiB its own,
// batch 64)".
std::string AloneDescription(const PackingFacts& facts) {
  const AloneFootprint& alone = *facts.alone;
  const std::string kept =
      facts.on_cpu ? absl::StrCat("the host's ", facts.host_cores, " cores") : "the GPU";
  auto while_training = [](const std::optional<double>& share) {
    return share ? absl::StrFormat(" (%.0f%% while training)", *share * 100) : std::string();
  };
  return absl::StrCat(
      "alone a trial kept ", kept, " busy ", absl::StrFormat("%.0f%%", alone.busy * 100),
      " of the time", while_training(alone.busy_training),
      alone.sm_active ? absl::StrFormat(", its multiprocessors %.0f%%", *alone.sm_active * 100)
                      : "",
      alone.sm_active ? while_training(alone.sm_active_training) : "",
      !facts.on_cpu && alone.host_busy
          ? absl::StrFormat(", its worker %.1f host cores", *alone.host_busy * facts.host_cores)
          : "",
      !facts.on_cpu && alone.host_busy && alone.host_busy_training
          ? absl::StrFormat(" (%.1f while training)", *alone.host_busy_training * facts.host_cores)
          : "",
      " with ", GiB(alone.used_bytes), " of ", GiB(alone.total_bytes), " GiB in use",
      MemoryNote(alone));
}

}  // namespace

Packing DecidePacking(const PackingFacts& facts) {
  const std::string per = facts.on_cpu ? "at once on the CPU" : "per GPU";
  if (facts.max_pack == 1) return {1, absl::StrCat("1 trial ", per, " (max_pack 1)")};
  if (!facts.alone) return {1, ""};
  const AloneFootprint& alone = *facts.alone;
  const int lanes = std::max(1, facts.lanes);
  const double batch_scale =
      alone.batch_size > 0 && facts.largest_batch > alone.batch_size
          ? static_cast<double>(facts.largest_batch) / static_cast<double>(alone.batch_size)
          : 1.0;
  const double per_trial = std::max<double>(1.0, MemoryPerTrial(alone, batch_scale));
  const int by_memory = alone.total_bytes > 0
                            ? static_cast<int>(std::floor(
                                  kTarget * static_cast<double>(alone.total_bytes) / per_trial))
                            : 1;
  // Every lane packs as many, and all of them share the host's cores.
  const double cores_per_trial = CoresPerTrial(facts);
  const int by_cores =
      std::max(1, static_cast<int>(std::floor(
                      (facts.on_cpu ? facts.host_cores : facts.host_cores - 1) / cores_per_trial)) /
                      lanes);
  std::vector<Bound> bounds = BusyBounds(facts);
  bounds.push_back({by_memory, batch_scale > 1 ? absl::StrFormat("memory (x%.1f for batch %d)",
                                                                 batch_scale, facts.largest_batch)
                                               : "memory"});
  bounds.push_back(
      {by_cores,
       absl::StrCat(
           facts.host_cores, " host cores",
           lanes > 1 ? absl::StrCat(" over ", lanes, facts.on_cpu ? " CPU slots" : " GPUs") : "",
           cores_per_trial > 1 ? absl::StrFormat(" (%.1f a trial)", cores_per_trial) : "")});
  bounds.push_back({kMaxPack, absl::StrCat("traind's most, ", kMaxPack)});
  if (facts.max_pack > 1) {
    bounds.push_back({facts.max_pack, absl::StrCat("max_pack ", facts.max_pack)});
  }
  const Bound& tightest =
      *std::min_element(bounds.begin(), bounds.end(),
                        [](const Bound& a, const Bound& b) { return a.width < b.width; });
  const int width = std::max(1, tightest.width);
  const bool side_by_side = width > 1 && !facts.on_cpu && facts.side_by_side;
  const std::string how =
      width == 1 ? absl::StrCat("1 trial ", per, ", not packed")
                 : absl::StrCat(width, " trials ", per, side_by_side ? " side by side (MPS)" : "");
  return {width, absl::StrCat(how, ", bounded by ", tightest.name, "; ", AloneDescription(facts)),
          side_by_side};
}

std::optional<AloneFootprint> AloneReading(const trainer::v1::Job& trial) {
  if (trial.state() != trainer::v1::Job::SUCCEEDED && trial.state() != trainer::v1::Job::PAUSED) {
    return std::nullopt;
  }
  if (!trial.has_latest_step()) return std::nullopt;
  const trainer::v1::StepMetrics& step = trial.latest_step();
  if (!step.has_device_busy() || step.device_total_bytes() <= 0) return std::nullopt;
  AloneFootprint reading;
  reading.busy = step.device_busy();
  if (step.has_device_busy_training()) reading.busy_training = step.device_busy_training();
  if (step.has_device_sm_active()) reading.sm_active = step.device_sm_active();
  if (step.has_device_sm_active_training()) {
    reading.sm_active_training = step.device_sm_active_training();
  }
  if (step.has_host_busy()) reading.host_busy = step.host_busy();
  if (step.has_host_busy_training()) reading.host_busy_training = step.host_busy_training();
  reading.used_bytes = step.device_used_bytes();
  reading.total_bytes = step.device_total_bytes();
  reading.batch_bytes = step.peak_driver_allocated_bytes();
  reading.batch_size = trial.spec().batch_size();
  // A program's batch size is its {batch_size}, when the search gives it one.
  if (const auto& params = trial.spec().script().params(); reading.batch_size == 0) {
    if (auto it = params.find("batch_size"); it != params.end()) {
      if (!absl::SimpleAtoi(it->second, &reading.batch_size)) reading.batch_size = 0;
    }
  }
  return reading;
}

AloneFootprint Larger(const AloneFootprint& a, const AloneFootprint& b) {
  AloneFootprint larger;
  larger.busy = std::max(a.busy, b.busy);
  // One too short to read stays unread: it may fill the device (DecidePacking).
  if (a.busy_training && b.busy_training) {
    larger.busy_training = std::max(*a.busy_training, *b.busy_training);
  }
  // Likewise the multiprocessors: unread in one, the time share decides.
  if (a.sm_active && b.sm_active) larger.sm_active = std::max(*a.sm_active, *b.sm_active);
  if (a.sm_active_training && b.sm_active_training) {
    larger.sm_active_training = std::max(*a.sm_active_training, *b.sm_active_training);
  }
  // The host's cores: read on either, the busier (unread, one core each errs low).
  auto busier = [](const std::optional<double>& x, const std::optional<double>& y) {
    return x || y ? std::optional<double>(std::max(x.value_or(0), y.value_or(0))) : std::nullopt;
  };
  larger.host_busy = busier(a.host_busy, b.host_busy);
  larger.host_busy_training = busier(a.host_busy_training, b.host_busy_training);
  larger.used_bytes = std::max(a.used_bytes, b.used_bytes);
  larger.total_bytes = std::max(a.total_bytes, b.total_bytes);
  // The used memory scales from the batch it was read at: keep the three together.
  const AloneFootprint& fuller = a.used_bytes >= b.used_bytes ? a : b;
  larger.batch_size = fuller.batch_size;
  larger.batch_bytes = fuller.batch_bytes;
  return larger;
}

}  // namespace traind
