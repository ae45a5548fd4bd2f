#include "engine/train_step.h"

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
