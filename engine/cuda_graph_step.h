// CudaGraphTrainStep: the whole training step — forward, loss, backward and a fused Adam/AdamW
// update — captured once in a CUDA graph and replayed for every batch. Small models (LeNet5, the
// MLP) are bound by kernel launches, not arithmetic: one graph launch replaces a few hundred.
// Batches are copied into static input buffers first (the gather stays outside the graph). The
// optimizer keeps its step count on the device (ATen's fused kernels), which a captured
// torch::optim::Adam could not: its host-side count would freeze the bias correction.
// Built only where LibTorch has CUDA (TRAIND_HAVE_CUDA) and the fused optimizers (2.x).
// Thread-compatible; use from one thread.
#ifndef TRAIND_ENGINE_CUDA_GRAPH_STEP_H_
#define TRAIND_ENGINE_CUDA_GRAPH_STEP_H_

#include <torch/torch.h>

#include <memory>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class CudaGraphTrainStep {
 public:
  virtual ~CudaGraphTrainStep() = default;
  // Captures the step for batches of `batch_size` inputs shaped like `sample` ([C, H, W]) with
  // targets like `label_sample` (a class index, or an mse target).
  // The model's parameters are left exactly as they were (warm-up steps are undone).
  // UNIMPLEMENTED where this build has no CUDA graphs.
  static absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> Create(
      torch::nn::AnyModule model, const trainer::v1::JobSpec& spec, const torch::Device& device,
      int64_t batch_size, const torch::Tensor& sample, const torch::Tensor& label_sample);
  // Replays the step on this batch (already on the device). Returns the loss as a device
  // tensor that the next Run overwrites: read it before then.
  virtual torch::Tensor Run(const torch::Tensor& images, const torch::Tensor& labels) = 0;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_CUDA_GRAPH_STEP_H_
