#include "engine/cpu/adam_step.h"

#include <ATen/Parallel.h>

#include <cmath>

namespace traind {

namespace {
// Elements per parallel task: one task for LeNet5's small layers, several for VGG16's.
constexpr int64_t kGrain = 1 << 16;
}  // namespace

bool AdamStepCpuSupports(const at::Tensor& param) {
  const at::Tensor& grad = param.grad();
  return param.device().is_cpu() && param.scalar_type() == at::kFloat && param.is_contiguous() &&
         grad.defined() && !grad.is_sparse() && grad.scalar_type() == at::kFloat;
}

void AdamStepCpu(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, int64_t step, const AdamHyperparameters& h) {
  const at::Tensor g_contiguous = grad.contiguous();
  float* p = param.data_ptr<float>();
  const float* g = g_contiguous.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  const double correction1 = 1 - std::pow(h.beta1, static_cast<double>(step));
  const double correction2 = 1 - std::pow(h.beta2, static_cast<double>(step));
  const float beta1 = static_cast<float>(h.beta1), beta2 = static_cast<float>(h.beta2);
  const float one_minus_beta1 = static_cast<float>(1 - h.beta1);
  const float one_minus_beta2 = static_cast<float>(1 - h.beta2);
  const float step_size = static_cast<float>(h.lr / correction1);
  const float inverse_sqrt_correction2 = static_cast<float>(1 / std::sqrt(correction2));
  const float eps = static_cast<float>(h.eps);
  const float coupled_decay = h.decoupled ? 0.f : static_cast<float>(h.weight_decay);
  const float shrink = h.decoupled ? static_cast<float>(1 - h.lr * h.weight_decay) : 1.f;
  at::parallel_for(0, param.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float gradient = g[i] + coupled_decay * p[i];
      m[i] = m[i] * beta1 + one_minus_beta1 * gradient;
      v[i] = v[i] * beta2 + one_minus_beta2 * gradient * gradient;
      const float denominator = std::sqrt(v[i]) * inverse_sqrt_correction2 + eps;
      p[i] = p[i] * shrink - step_size * m[i] / denominator;
    }
  });
}

}  // namespace traind
