// Adam / AdamW for a weight that the forward and backward passes use in bf16: one pass reads the
// bf16 gradient and the fp32 master weight and moments, and writes the master, the moments and
// the bf16 copy the next forward pass reads. Under autocast the same step costs three passes
// over the weights (cast the weight to bf16, cast its gradient back to fp32, the fp32 update),
// which bf16 does not shrink: for VGG16's 134 M parameters they are a fixed ~2 ms of every step
// (docs/benchmarks-history.md). The arithmetic is ATen's fused Adam's
// (torch.optim.Adam(fused=True)) in fp32 as LibTorch 2.11 writes it (fp32 hyperparameters, the
// moments as nested fma), so the update matches it given the same gradient (CudaGraphStepTest
// compares the two). Compiled only where nvcc is found (TRAIND_HAVE_CUDA_KERNELS); capturable in a
// CUDA graph (the step count, the learning rate and the clipping factor are read on the device).
#ifndef TRAIND_ENGINE_CUDA_MASTER_WEIGHT_ADAM_H_
#define TRAIND_ENGINE_CUDA_MASTER_WEIGHT_ADAM_H_

#include <ATen/core/Tensor.h>

namespace traind {

struct AdamHyperparameters {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;  // AdamW: the decay scales the weight instead of joining the gradient
};

// Whether one MasterWeightAdamStep can update these tensors: all on one CUDA device, master and
// moments fp32, gradient and copy bf16, the same sizes, non-overlapping and dense with the same
// strides (where a dimension has more than one element: the others place nothing).
bool MasterWeightAdamSupports(const at::Tensor& master, const at::Tensor& grad,
                              const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                              const at::Tensor& copy);

// One Adam step on the current CUDA stream. Updates `master`, `exp_avg`, `exp_avg_sq` and `copy`
// (= bf16(master), rounded to nearest) in place. `step` ([] fp32: this step's count, already
// advanced) and `learning_rate` ([] fp32) are read on the device; `clip_factor` ([] fp32, or
// undefined for 1) multiplies the gradient first (gradient clipping's factor; unlike ATen's
// grad_scale, which divides by fp16's loss scale).
void MasterWeightAdamStep(const at::Tensor& master, const at::Tensor& grad,
                          const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                          const at::Tensor& copy, const at::Tensor& step,
                          const at::Tensor& learning_rate, const at::Tensor& clip_factor,
                          const AdamHyperparameters& hyper);

}  // namespace traind

#endif  // TRAIND_ENGINE_CUDA_MASTER_WEIGHT_ADAM_H_
