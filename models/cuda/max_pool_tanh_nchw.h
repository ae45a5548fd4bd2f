// tanh(max_pool2d(x)) in one pass for NCHW CUDA tensors (fp32 or bf16) whose pooling windows
// tile the input: kernel == stride, no padding, height and width multiples of the kernel.
// LeNet5 pools its convolutions' outputs this way (6 and 16 channels, so not the NHWC kernels'
// multiple of 8). ATen runs the pooling, the tanh and, in the backward, tanh's and the pooling's
// gradients as four kernels per layer, over data that fits in cache; at LeNet5's batch 256 on the
// H200 those eight kernels were 0.05 ms of a 0.36 ms step (docs/benchmarks-history.md). Here the
// forward writes tanh of each window's maximum and which element it took (one byte), and the
// backward writes every input element of a window at once: tanh's gradient at the picked one, zero
// elsewhere.
#ifndef TRAIND_MODELS_CUDA_MAX_POOL_TANH_NCHW_H_
#define TRAIND_MODELS_CUDA_MAX_POOL_TANH_NCHW_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace traind {

// Whether the kernels below take this input and pooling: see the file comment; windows of at
// most 15 x 15 (a pick is one byte).
bool MaxPoolTanhNchwSupports(const at::Tensor& input, int64_t kernel, int64_t stride,
                             int64_t padding);

// tanh of each window's maximum ([N, C, H / kernel, W / kernel], contiguous) and the element of
// its window the maximum was, kh * kernel + kw (uint8, same shape). The pick is ATen's: the first
// maximum in row-major window order, or the window's last NaN.
std::pair<at::Tensor, at::Tensor> MaxPoolTanhNchwForward(const at::Tensor& input, int64_t kernel);

// The input gradient ([N, C, H, W], contiguous) from the gradient of the forward's output, that
// output (tanh's gradient is 1 - output^2) and the picks.
at::Tensor MaxPoolTanhNchwBackward(const at::Tensor& grad_output, const at::Tensor& output,
                                   const at::Tensor& picks, int64_t kernel);

}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_MAX_POOL_TANH_NCHW_H_
