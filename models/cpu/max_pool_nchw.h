// 2-d max pooling of contiguous (NCHW) fp32 CPU tensors with non-overlapping windows (stride ==
// kernel, no padding, floor mode): LeNet5's and VGG16's pooling. ATen 1.13's NCHW CPU forward
// took 3.7 ms of LeNet5's ~11 ms step at batch 128 on the 2-core machine (its two poolings, more
// than both convolutions' forward; docs/benchmarks-history.md); these loops read each input element
// once. Values and indices are ATen's exactly (a NaN wins, the first of equal values wins; indices
// count within one H x W plane), so ATen's backward could take them too.
#ifndef TRAIND_MODELS_CPU_MAX_POOL_NCHW_H_
#define TRAIND_MODELS_CPU_MAX_POOL_NCHW_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace traind {

// Whether MaxPoolNchwForward takes this input with this window.
bool MaxPoolNchwSupports(const at::Tensor& input, int64_t kernel, int64_t stride, int64_t padding);

// input: [N, C, H, W]; returns output and int64 indices, both [N, C, H / kernel, W / kernel].
std::pair<at::Tensor, at::Tensor> MaxPoolNchwForward(const at::Tensor& input, int64_t kernel);

// Windows do not overlap, so each input element takes at most one output's gradient.
// grad_output and indices: [N, C, OH, OW]; returns [N, C, height, width], zero where no window's
// maximum was.
at::Tensor MaxPoolNchwBackward(const at::Tensor& grad_output, const at::Tensor& indices,
                               int64_t height, int64_t width);

}  // namespace traind

#endif  // TRAIND_MODELS_CPU_MAX_POOL_NCHW_H_
