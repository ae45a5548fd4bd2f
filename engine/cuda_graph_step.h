// CudaGraphTrainStep: the whole training step — forward, loss, backward and a fused Adam/AdamW
// update — captured once in a CUDA graph and replayed for every batch. Small models (LeNet5, the
// MLP) are bound by kernel launches, not arithmetic: one graph launch replaces a few hundred.
// Batches are copied into static input buffers first (the gather stays outside the graph). The
// optimizer keeps its step count on the device (ATen's fused kernels), which a captured
// torch::optim::Adam could not: its host-side count would freeze the bias correction. The
// learning rate is a device tensor too (a schedule sets it before each replay); label smoothing
// and gradient clipping are captured with the step. The moments are the optimizer's own tensors,
// so a checkpoint saves them; SyncOptimizer() writes the step counts back first.
// Under bf16 autocast, conv and linear weights can train through bf16 copies
// (`bf16_weight_copies`): the graph's forward and backward read the copies, so autocast casts no
// weight and no gradient, and one kernel (engine/cuda/master_weight_adam.h) updates the fp32
// weight, its moments and its copy from the bf16 gradient. The forward, the backward and the
// gradients are the numbers autocast's casts give; the fp32 weights stay the model's, which
// evaluation and checkpoints read. The weights must then change only through Run() (a copy is
// refreshed by the update alone).
// Built only where LibTorch has CUDA (TRAIND_HAVE_CUDA) and the fused optimizers (2.x).
// Thread-compatible; use from one thread.
#ifndef TRAIND_ENGINE_CUDA_GRAPH_STEP_H_
#define TRAIND_ENGINE_CUDA_GRAPH_STEP_H_

#include <torch/torch.h>

#include <memory>

#include "absl/status/statusor.h"
#include "engine/step_runner.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class CudaGraphTrainStep : public StepRunner {
 public:
  // Whether this build can capture graphs (LibTorch 2.x with CUDA).
  static bool Available();
  // Captures the step for batches of `batch_size` inputs shaped like `sample` ([C, H, W]) with
  // targets like `label_sample` (a class index, or an mse target), updating `optimizer`'s state
  // (one of CreateFusedAdam's; a loaded checkpoint's state continues), which must outlive the
  // step. The model's parameters and the optimizer's state are left exactly as they were
  // (warm-up steps are undone). `bf16_weight_copies`: with amp bf16, where this build has
  // traind's CUDA kernels, train conv and linear weights through bf16 copies (above).
  // UNIMPLEMENTED where this build has no CUDA graphs.
  static absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> Create(
      torch::nn::AnyModule model, torch::optim::Optimizer& optimizer,
      const trainer::v1::JobSpec& spec, const torch::Device& device, int64_t batch_size,
      const torch::Tensor& sample, const torch::Tensor& label_sample,
      bool bf16_weight_copies = true);
  // Whether traind_worker's environment leaves bf16 weight copies on (TRAIND_BF16_WEIGHT_COPIES=0
  // turns them off, to measure them).
  static bool Bf16WeightCopiesWanted();
  // StepRunner: Run replays the step on this batch; SyncOptimizer writes the device's step counts
  // into the optimizer's state (before it is saved). Flush has nothing to do (no accumulation).
  // How many parameter tensors train through bf16 copies (0: none), and their elements.
  virtual int64_t bf16_copied_tensors() const = 0;
  virtual int64_t bf16_copied_elements() const = 0;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_CUDA_GRAPH_STEP_H_
