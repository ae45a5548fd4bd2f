// The input gradient of 2-d max pooling for channels_last (NHWC) CUDA tensors, fp32 or bf16,
// from the int64 indices of at::max_pool2d_with_indices. PyTorch's own NHWC backward took as long
// in bf16 as in fp32, 7-9% of a ResNet-18 training step on the H200 (docs/benchmarks.md);
// this one gathers: each thread owns 8 channels of one input pixel and sums the gradients of the
// few output windows that picked it, so every element is written once and nothing is zeroed.
#ifndef TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_
#define TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace traind {

struct MaxPoolGeometry {
  int64_t kernel, stride, padding;  // square windows, dilation 1, floor mode
};

// Whether MaxPoolNhwcBackward takes a pooling of this input.
bool MaxPoolNhwcSupports(const at::Tensor& input);

// grad_output and indices: [N, C, OH, OW] in channels_last; returns [N, C, H, W] like
// `input_sizes`.
at::Tensor MaxPoolNhwcBackward(const at::Tensor& grad_output, const at::Tensor& indices,
                               at::IntArrayRef input_sizes, const MaxPoolGeometry& geometry);

}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_
