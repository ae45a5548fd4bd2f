#include "engine/batch_size_search.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/log_format.h"
#include "common/status_macros.h"
#include "engine/device.h"
#include "engine/optimizer_factory.h"
#include "engine/train_step.h"

namespace traind {

namespace {

constexpr int64_t kFirst = 32;
constexpr int64_t kLargest = 65536;
constexpr double kBudgetFraction = 0.8;
constexpr double kSlowStepSeconds = 20;  // a step this slow is no use, whatever the memory

// Peak bytes of two training steps at `batch_size` on a throwaway model.
absl::StatusOr<int64_t> ProbePeak(const trainer::v1::JobSpec& spec, const ModelInput& input,
                                  const ProbeExample& example, const std::string& model_path,
                                  const torch::Device& device, int64_t batch_size,
                                  double* step_seconds) {
  ASSIGN_OR_RETURN(torch::nn::AnyModule model, CreateModel(spec, input, model_path));
  PlaceModel(model, spec, device);
  ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> optimizer,
                   CreateOptimizer(spec, model.ptr()->parameters()));
  const LossKind loss = LossKindFromName(spec.loss());
  TrainStep step(model, optimizer.get(), device, spec.amp(), 1, Augmentation{}, spec.seed(), loss);
  auto batch_of = [batch_size](const torch::Tensor& one) {
    std::vector<int64_t> shape = {batch_size};
    for (int64_t d : one.sizes()) shape.push_back(d);
    return shape;
  };
  const auto on_device = torch::TensorOptions().device(device);
  torch::Tensor images = torch::randn(batch_of(example.input), on_device);
  torch::Tensor labels = loss == LossKind::kMse ? torch::randn(batch_of(example.label), on_device)
                                                : torch::randint(input.num_classes, {batch_size},
                                                                 on_device.dtype(torch::kInt64));
  Synchronize(device);
  ResetPeakMemory(device);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) step.Run(images, labels);
  Synchronize(device);
  *step_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 2;
  const MemoryReading m = ReadMemory(device);
  return std::max(m.peak_current_allocated, m.current_allocated);
}

}  // namespace

absl::StatusOr<BatchSizeChoice> ChooseBatchSize(const trainer::v1::JobSpec& spec,
                                                const ModelInput& input,
                                                const ProbeExample& example,
                                                const std::string& model_path,
                                                const torch::Device& device, int64_t train_size,
                                                const std::atomic<bool>& stop) {
  const int64_t budget = static_cast<int64_t>(AvailableMemory(device) * kBudgetFraction);
  // On the CPU the peak is the process's RSS, which includes what is loaded already.
  const int64_t baseline = device.is_cpu() ? ReadMemory(device).current_allocated : 0;
  const int64_t largest = std::min<int64_t>(kLargest, std::max<int64_t>(kFirst, train_size / 4));
  BatchSizeChoice choice;
  std::string stopped_by =
      absl::StrCat("the largest tried (at most a quarter of the ", train_size, " training images)");
  int64_t chosen_peak = 0;
  for (int64_t batch_size = kFirst; batch_size <= largest; batch_size *= 2) {
    if (stop.load()) return absl::CancelledError("cancelled");
    double seconds = 0;
    absl::StatusOr<int64_t> peak;
    try {
      peak = ProbePeak(spec, input, example, model_path, device, batch_size, &seconds);
    } catch (const c10::Error& e) {
      if (!IsOutOfMemoryMessage(e.what_without_backtrace())) throw;
      ReleaseCachedMemory(device);
      stopped_by = absl::StrCat(batch_size, " ran out of memory");
      break;
    }
    if (!peak.ok()) return peak.status();
    const int64_t used = *peak - baseline;
    if (used > budget) {
      stopped_by = absl::StrCat(batch_size, " needs ", FormatBytes(used));
      break;
    }
    choice.batch_size = batch_size;
    chosen_peak = used;
    if (seconds > kSlowStepSeconds) {
      stopped_by =
          absl::StrCat(batch_size, " already takes ", static_cast<int>(seconds), " s a step");
      break;
    }
  }
  ReleaseCachedMemory(device);
  if (choice.batch_size == 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batch_size: even ", kFirst, " does not fit on ", device.str(), " (",
                     stopped_by, "; budget ", FormatBytes(budget), ")"));
  }
  choice.explanation =
      absl::StrCat("batch-size auto: ", choice.batch_size, " (peak ", FormatBytes(chosen_peak),
                   " of a ", FormatBytes(budget), " budget; stopped at ", stopped_by, ")");
  return choice;
}

}  // namespace traind
