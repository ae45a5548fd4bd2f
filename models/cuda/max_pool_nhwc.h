// 2-d max pooling for channels_last (NHWC) CUDA tensors, fp32 or bf16, forward and input
// gradient. PyTorch's NHWC forward writes an int64 index per output element and its backward
// reads them back: for ResNet-18's stem (a 3x3, stride 2 pool of 64 x 112 x 112 maps) that index
// traffic was larger than the pooled output, and the pair took 1.6 ms of a 22 ms fp32 step on
// the H200 (docs/benchmarks-history.md). Here the forward keeps one byte per output element, which
// element of its window it took, and the backward gathers: each thread owns 8 channels of one
// input pixel and sums the gradients of the few output windows that took it, so every element
// is written once and nothing is zeroed.
#ifndef TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_
#define TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace traind {

struct MaxPoolGeometry {
  int64_t kernel, stride, padding;  // square windows, dilation 1, floor mode
};

// The pooled output's sizes, [N, C, OH, OW], for an input of `input_sizes` [N, C, H, W].
std::vector<int64_t> MaxPoolOutputSizes(at::IntArrayRef input_sizes,
                                        const MaxPoolGeometry& geometry);

// Whether the kernels below take a pooling of this input: CUDA, fp32 or bf16, channels_last with
// a multiple of 8 channels on a 16-byte boundary, windows of at most 15 x 15, padding at most
// half the window (as ATen requires).
bool MaxPoolNhwcSupports(const at::Tensor& input, const MaxPoolGeometry& geometry);

// The pooled output ([N, C, OH, OW], channels_last) and, for each of its elements, the element
// of its window it took, kh * kernel + kw (uint8, same shape and layout). The picks are ATen's:
// the first maximum in row-major window order, or a NaN (the window's last NaN).
std::pair<at::Tensor, at::Tensor> MaxPoolNhwcForward(const at::Tensor& input,
                                                     const MaxPoolGeometry& geometry);

// The input gradient ([N, C, H, W] like `input_sizes`, channels_last) from the output gradient
// and the forward's picks.
at::Tensor MaxPoolNhwcBackward(const at::Tensor& grad_output, const at::Tensor& picks,
                               at::IntArrayRef input_sizes, const MaxPoolGeometry& geometry);

}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_MAX_POOL_NHWC_H_
