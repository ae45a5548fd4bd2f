// One Adam (AdamW) update of a contiguous fp32 CPU parameter in a single pass over parameter,
// gradient and moments. LibTorch 1.13's torch::optim::Adam runs six to eight whole-tensor
// operations per parameter and step; on the 2-core machine that was ~0.4 ms of LeNet5's ~10 ms
// step, a share that grows as the batch shrinks (docs/benchmarks-history.md). The arithmetic is
// torch::optim::Adam's / AdamW's (PyTorch's documented update), in fp32 with double-precision
// bias corrections, so results agree with theirs to rounding.
#ifndef TRAIND_ENGINE_CPU_ADAM_STEP_H_
#define TRAIND_ENGINE_CPU_ADAM_STEP_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace traind {

struct AdamHyperparameters {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;  // AdamW: weight decay shrinks the weight, not added to the gradient
};

// Whether AdamStepCpu takes this parameter (CPU, fp32, contiguous, a dense gradient alike).
bool AdamStepCpuSupports(const at::Tensor& param);

// `step` is the count after this update (1 for the first), as torch::optim::Adam's state has it.
void AdamStepCpu(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
                 const at::Tensor& exp_avg_sq, int64_t step, const AdamHyperparameters& h);

}  // namespace traind

#endif  // TRAIND_ENGINE_CPU_ADAM_STEP_H_
