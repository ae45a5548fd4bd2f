// StepRunner: what the training loop asks of one optimisation step, whichever way it runs: eagerly
// (TrainStep, engine/train_step.h) or replayed from a captured CUDA graph (CudaGraphTrainStep,
// engine/cuda_graph_step.h). The loop picks one at start-up and never branches on which.
// Thread-compatible; use from one thread.
#ifndef TRAIND_ENGINE_STEP_RUNNER_H_
#define TRAIND_ENGINE_STEP_RUNNER_H_

#include <torch/torch.h>

#include "absl/status/status.h"

namespace traind {

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Trains on one batch (already on the device). Returns the loss as a device tensor; reading it
  // synchronises, and a graph's next replay overwrites it: read it before the next Run.
  virtual torch::Tensor Run(const torch::Tensor& images, const torch::Tensor& labels) = 0;
  // The learning rate of the following steps (a schedule's value for the next step).
  virtual void SetLearningRate(double learning_rate) = 0;
  // End of an epoch: applies gradients still accumulating, if any.
  virtual void Flush() {}
  // Before a checkpoint: leaves the optimizer's own state complete (a graph keeps its step
  // counts on the device).
  virtual absl::Status SyncOptimizer() { return absl::OkStatus(); }
};

}  // namespace traind

#endif  // TRAIND_ENGINE_STEP_RUNNER_H_
