// Mixed precision: autocast scopes per device (bf16 on CPU; bf16 or fp16 on CUDA; fp16 on MPS
// where this LibTorch has MPS autocast) and a gradient scaler for fp16 (torch.amp.GradScaler's
// algorithm: scale the loss, unscale and check the gradients, skip steps that overflowed, grow the
// scale after 2000 good steps). Thread-compatible; autocast state is per thread.
#ifndef TRAIND_ENGINE_MIXED_PRECISION_H_
#define TRAIND_ENGINE_MIXED_PRECISION_H_

#include <torch/torch.h>

#include <string>
#include <vector>

namespace traind {

// The `amp` modes this LibTorch supports on `device` ("bf16", "fp16").
std::vector<std::string> SupportedAmpModes(const torch::Device& device);

// Enables autocast to `amp` ("bf16" / "fp16"; "" does nothing) for this thread until destroyed.
class AutocastScope {
 public:
  AutocastScope(const torch::Device& device, const std::string& amp);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_;
};

class GradScaler {
 public:
  GradScaler(const torch::Device& device, bool enabled);
  bool enabled() const { return enabled_; }
  torch::Tensor Scale(const torch::Tensor& loss);
  // Unscales the gradients in place; false when any is inf/NaN (then skip optimizer.step()).
  // Calls Update() itself.
  bool UnscaleAndUpdate(const std::vector<torch::Tensor>& parameters);

  // The current scale, [1] float on the device (undefined when disabled).
  const torch::Tensor& scale() const { return scale_; }

  // Checkpoints: the scale and its growth tracker as `grad_scaler_scale` and
  // `grad_scaler_growth`, so a resumed fp16 job does not start again at 65536 and skip steps
  // while the scale falls back. Load keeps the initial state when the archive has none (a
  // checkpoint from before, or of a job without fp16). Both do nothing when disabled.
  void Save(torch::serialize::OutputArchive& archive) const;
  void Load(torch::serialize::InputArchive& archive);

 private:
  bool enabled_;
  torch::Tensor scale_;           // [1] float on the device
  torch::Tensor growth_tracker_;  // [1] int on the device
};

}  // namespace traind

#endif  // TRAIND_ENGINE_MIXED_PRECISION_H_
