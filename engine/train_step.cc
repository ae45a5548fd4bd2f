#include "engine/train_step.h"

#include <algorithm>
#include <vector>

#include "engine/shard_threads.h"
#include "models/model_factory.h"

namespace traind {

TrainStep::TrainStep(torch::nn::AnyModule model, torch::optim::Optimizer* optimizer,
                     const torch::Device& device, std::string amp, int accumulate,
                     Augmentation augmentation, uint64_t seed, LossKind loss,
                     double label_smoothing, double clip_grad_norm)
    : model_(std::move(model)),
      optimizer_(optimizer),
      device_(device),
      amp_(std::move(amp)),
      accumulate_(accumulate),
      augmentation_(augmentation),
      loss_(loss),
      label_smoothing_(label_smoothing),
      clip_grad_norm_(clip_grad_norm),
      rng_(at::detail::createCPUGenerator(seed + 7)),
      // fp16 needs loss scaling (its range underflows small gradients); bf16 does not.
      scaler_(device, amp_ == "fp16" && !device.is_cpu()) {
  optimizer_->zero_grad();
}

torch::Tensor TrainStep::Run(const torch::Tensor& images, const torch::Tensor& labels) {
  torch::Tensor input = augmentation_.enabled() ? Augment(images, augmentation_, rng_) : images;
  if (shard_threads_ != nullptr && shard_threads_->shards() > 1 && input.size(0) > 1 &&
      device_.is_cpu() && !before_backward_ && !scaler_.enabled()) {
    torch::Tensor loss = ForwardBackwardInShards(input, labels);
    if (++pending_ == accumulate_) ApplyGradients();
    return loss;
  }
  torch::Tensor loss;
  {
    AutocastScope autocast(device_, amp_);
    loss = ComputeLoss(loss_, model_.forward(input), labels, label_smoothing_);
  }
  torch::Tensor scaled = accumulate_ > 1 ? loss / accumulate_ : loss;
  if (before_backward_) before_backward_();
  scaler_.Scale(scaled).backward();
  if (++pending_ == accumulate_) ApplyGradients();
  return loss.detach();
}

torch::Tensor TrainStep::ForwardBackwardInShards(const torch::Tensor& input,
                                                 const torch::Tensor& labels) {
  const std::vector<torch::Tensor> parameters = TrainableParameters(*model_.ptr());
  const int64_t batch = input.size(0);
  const int shards = static_cast<int>(std::min<int64_t>(shard_threads_->shards(), batch));
  std::vector<std::vector<torch::Tensor>> gradients(shards);
  std::vector<torch::Tensor> losses(shards);
  shard_threads_->Run([&](int shard) {
    if (shard >= shards) return;
    const int64_t begin = batch * shard / shards;
    const int64_t end = batch * (shard + 1) / shards;
    torch::Tensor loss;
    {
      AutocastScope autocast(device_, amp_);  // autocast's state is per thread
      loss = ComputeLoss(loss_, model_.forward(input.slice(0, begin, end)),
                         labels.slice(0, begin, end), label_smoothing_);
    }
    // Each loss is a mean over its shard's samples: weighted by the shard's share, they add up to
    // the batch's mean.
    loss = loss * (static_cast<double>(end - begin) / static_cast<double>(batch));
    torch::Tensor scaled = accumulate_ > 1 ? loss / accumulate_ : loss;
    gradients[shard] = torch::autograd::grad({scaled}, parameters, /*grad_outputs=*/{},
                                             /*retain_graph=*/false, /*create_graph=*/false,
                                             /*allow_unused=*/true);
    losses[shard] = loss.detach();
  });
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i) {
    torch::Tensor& grad = parameters[i].mutable_grad();
    for (int shard = 0; shard < shards; ++shard) {
      const torch::Tensor& gradient = gradients[shard][i];
      if (!gradient.defined()) continue;  // a parameter this forward pass did not use
      if (!grad.defined()) grad = torch::zeros_like(parameters[i]);  // the parameter's layout
      grad.add_(gradient);
    }
  }
  torch::Tensor loss = losses[0];
  for (int shard = 1; shard < shards; ++shard) loss = loss + losses[shard];
  return loss;
}

void TrainStep::SetLearningRate(double learning_rate) {
  for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) {
    group.options().set_lr(learning_rate);
  }
}

void TrainStep::Flush() {
  if (pending_ > 0) ApplyGradients();
}

void TrainStep::ApplyGradients() {
  if (scaler_.UnscaleAndUpdate(model_.ptr()->parameters())) {
    // After unscaling, so the norm is the true gradients'.
    if (clip_grad_norm_ > 0) {
      torch::nn::utils::clip_grad_norm_(model_.ptr()->parameters(), clip_grad_norm_);
    }
    optimizer_->step();
  }
  optimizer_->zero_grad();
  pending_ = 0;
}

}  // namespace traind
