// One optimisation step (cross-entropy or mse, engine/loss.h), with every loop option applied:
// autocast, fp16 gradient scaling, gradient accumulation (loss / N, an optimizer step every N
// micro-batches) and augmentation. Shared by the training loop, the throughput benchmark and the
// batch-size search. With shard threads (set_shard_threads), each micro-batch is cut into that many
// shards trained at once, one thread each: every shard's loss is weighted by its share of the
// batch, its gradients come back from autograd::grad (nothing accumulates into .grad concurrently)
// and are added into the parameters' .grad in shard order, so a run is reproducible and the step is
// the batch's (up to rounding; the same on every run with the same number of shards). Only for CPU
// steps without a before-backward hook (data parallel) or gradient scaling, which Run then trains
// whole, and for models whose forward pass changes no state and draws no random numbers: no buffers
// (batch norm's running statistics), no dropout (engine/batch_shards.h's ShardingObstacle checks).
// Thread-compatible.
#ifndef TRAIND_ENGINE_TRAIN_STEP_H_
#define TRAIND_ENGINE_TRAIN_STEP_H_

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "data/augment.h"
#include "engine/loss.h"
#include "engine/mixed_precision.h"
#include "engine/step_runner.h"

namespace traind {

class ShardThreads;

class TrainStep : public StepRunner {
 public:
  // `label_smoothing`, `clip_grad_norm` (0: none): JobSpec's fields of those names.
  TrainStep(torch::nn::AnyModule model, torch::optim::Optimizer* optimizer,
            const torch::Device& device, std::string amp, int accumulate, Augmentation augmentation,
            uint64_t seed, LossKind loss = LossKind::kCrossEntropy, double label_smoothing = 0,
            double clip_grad_norm = 0);

  // Forward and backward on one micro-batch (already on the device); steps the optimizer after
  // every `accumulate` micro-batches. Returns the unscaled loss (a device tensor: reading it
  // synchronises, so callers read it only when they report it).
  torch::Tensor Run(const torch::Tensor& images, const torch::Tensor& labels) override;

  // Every parameter group's learning rate.
  void SetLearningRate(double learning_rate) override;

  // Runs just before each backward pass (data parallel: the gradient reducer's preparation).
  void set_before_backward(std::function<void()> hook) { before_backward_ = std::move(hook); }

  // Trains each micro-batch in `threads->shards()` shards at once (nullptr: whole). Not owned; it
  // outlives this step's use of it.
  void set_shard_threads(ShardThreads* threads) { shard_threads_ = threads; }

  // Applies pending accumulated gradients (end of an epoch).
  void Flush() override;

  // The augmentation's generator, saved in checkpoints so a resumed job draws the same crops.
  torch::Generator& rng() { return rng_; }

  // The fp16 gradient scaler (disabled otherwise), saved in checkpoints too.
  GradScaler& scaler() { return scaler_; }

 private:
  void ApplyGradients();
  // Run's forward and backward over shards; returns the batch's loss.
  torch::Tensor ForwardBackwardInShards(const torch::Tensor& input, const torch::Tensor& labels);

  torch::nn::AnyModule model_;
  torch::optim::Optimizer* optimizer_;
  torch::Device device_;
  std::string amp_;
  int accumulate_;
  Augmentation augmentation_;
  LossKind loss_;
  double label_smoothing_;
  double clip_grad_norm_;
  torch::Generator rng_;
  GradScaler scaler_;
  int pending_ = 0;  // micro-batches since the last optimizer step
  std::function<void()> before_backward_;
  ShardThreads* shard_threads_ = nullptr;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_TRAIN_STEP_H_
