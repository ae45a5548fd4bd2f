#include "engine/mixed_precision.h"

#include <ATen/autocast_mode.h>

namespace traind {

namespace {

// LibTorch 2.4 replaced the per-device setters with ones taking a device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define TRAIND_AUTOCAST_BY_DEVICE_TYPE 1
#endif

at::ScalarType ToDtype(const std::string& amp) { return amp == "fp16" ? at::kHalf : at::kBFloat16; }

void SetAutocast(c10::DeviceType type, bool enabled, at::ScalarType dtype) {
#ifdef TRAIND_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(type, dtype);
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (type == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  }
#endif
}

}  // namespace

std::vector<std::string> SupportedAmpModes(const torch::Device& device) {
  if (device.is_cpu()) return {"bf16"};
  if (device.is_cuda()) return {"bf16", "fp16"};
#ifdef TRAIND_AUTOCAST_BY_DEVICE_TYPE
  if (device.is_mps()) return {"fp16"};  // unverified on hardware, like the rest of the MPS path
#endif
  return {};
}

AutocastScope::AutocastScope(const torch::Device& device, const std::string& amp)
    : device_type_(device.type()) {
  if (amp.empty()) return;
  active_ = true;
  at::autocast::increment_nesting();
  SetAutocast(device_type_, true, ToDtype(amp));
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  SetAutocast(device_type_, false, at::kBFloat16);
  // Cached casts of the weights are only valid within one forward pass.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
}

GradScaler::GradScaler(const torch::Device& device, bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  scale_ = torch::full({1}, 65536.0, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  growth_tracker_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt32).device(device));
}

torch::Tensor GradScaler::Scale(const torch::Tensor& loss) {
  return enabled_ ? loss * scale_.to(loss.dtype()) : loss;
}

bool GradScaler::UnscaleAndUpdate(const std::vector<torch::Tensor>& parameters) {
  if (!enabled_) return true;
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.mutable_grad());
  }
  torch::Tensor found_inf = torch::zeros({1}, scale_.options());
  torch::Tensor inv_scale = scale_.reciprocal();
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  const bool ok = found_inf.item<float>() == 0.0f;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, 2.0, 0.5, 2000);
  return ok;
}

void GradScaler::Save(torch::serialize::OutputArchive& archive) const {
  if (!enabled_) return;
  archive.write("grad_scaler_scale", scale_);
  archive.write("grad_scaler_growth", growth_tracker_);
}

void GradScaler::Load(torch::serialize::InputArchive& archive) {
  if (!enabled_) return;
  torch::Tensor scale, growth;
  if (!archive.try_read("grad_scaler_scale", scale) ||
      !archive.try_read("grad_scaler_growth", growth)) {
    return;
  }
  torch::NoGradGuard no_grad;
  scale_.copy_(scale);
  growth_tracker_.copy_(growth);
}

}  // namespace traind
