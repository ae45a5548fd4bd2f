// tanh(pool(x)) for a traind::MaxPool2d followed by a Tanh, as LeNet5 runs them: one fused
// forward and one fused backward kernel for NCHW CUDA inputs whose windows tile the input
// (models/cuda/max_pool_tanh_nchw.h), the two modules one after the other elsewhere.
#ifndef TRAIND_MODELS_MAX_POOL_TANH_H_
#define TRAIND_MODELS_MAX_POOL_TANH_H_

#include <torch/torch.h>

#include "models/max_pool.h"

namespace traind {

torch::Tensor MaxPoolThenTanh(const torch::Tensor& input, MaxPool2dImpl& pool);

}  // namespace traind

#endif  // TRAIND_MODELS_MAX_POOL_TANH_H_
