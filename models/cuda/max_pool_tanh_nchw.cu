#include "models/cuda/max_pool_tanh_nchw.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <limits>

#include "models/cuda/max_pool_window.cuh"
#include "models/cuda/tensor_data.cuh"

namespace traind {
namespace {

using pool_window::kThreads;

// The sizes one pooling works on: each output element's window is `kernel` x `kernel` input
// elements of its own (n, c) plane, starting at (oy * kernel, ox * kernel).
struct TiledPool {
  int height, width, out_height, out_width, kernel;
};

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// The offset of output element `i`'s window's first element in the input.
__device__ __forceinline__ int64_t WindowOffset(int64_t i, const TiledPool& s) {
  const int ox = static_cast<int>(i % s.out_width);
  const int64_t rest = i / s.out_width;
  const int oy = static_cast<int>(rest % s.out_height);
  const int64_t plane = rest / s.out_height;
  return (plane * s.height + int64_t{oy} * s.kernel) * s.width + int64_t{ox} * s.kernel;
}

// tanh is computed in fp32 and rounded once, as ATen's tanh does for bf16.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolTanhForward(const T* __restrict__ x, T* __restrict__ y, uint8_t* __restrict__ picks,
                       TiledPool s, int64_t work) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T* window = x + WindowOffset(i, s);
    float best = -INFINITY;
    int pick = 0;
    for (int kh = 0; kh < s.kernel; ++kh) {
      for (int kw = 0; kw < s.kernel; ++kw) {
        const float v = ToFloat(window[kh * s.width + kw]);
        if (v > best || isnan(v)) {  // ATen's rule
          best = v;
          pick = kh * s.kernel + kw;
        }
      }
    }
    y[i] = FromFloat<T>(tanhf(best));
    picks[i] = static_cast<uint8_t>(pick);
  }
}

// dy * (1 - y^2), ATen's tanh gradient, in fp32 and rounded once; the windows tile the input, so
// each input element is written by exactly one thread and nothing needs zeroing first.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolTanhBackward(const T* __restrict__ dy, const T* __restrict__ y,
                        const uint8_t* __restrict__ picks, T* __restrict__ dx, TiledPool s,
                        int64_t work) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float t = ToFloat(y[i]);
    const T picked = FromFloat<T>(ToFloat(dy[i]) * (1.0f - t * t));
    const T zero = FromFloat<T>(0.0f);
    const int pick = picks[i];
    T* window = dx + WindowOffset(i, s);
    for (int kh = 0; kh < s.kernel; ++kh) {
      for (int kw = 0; kw < s.kernel; ++kw) {
        window[kh * s.width + kw] = kh * s.kernel + kw == pick ? picked : zero;
      }
    }
  }
}

TiledPool TiledPoolOf(at::IntArrayRef input_sizes, int64_t kernel) {
  return TiledPool{static_cast<int>(input_sizes[2]), static_cast<int>(input_sizes[3]),
                   static_cast<int>(input_sizes[2] / kernel),
                   static_cast<int>(input_sizes[3] / kernel), static_cast<int>(kernel)};
}

}  // namespace

bool MaxPoolTanhNchwSupports(const at::Tensor& input, int64_t kernel, int64_t stride,
                             int64_t padding) {
  return input.is_cuda() && input.dim() == 4 &&
         (input.scalar_type() == at::kFloat || input.scalar_type() == at::kBFloat16) &&
         input.is_contiguous() && kernel >= 1 && kernel <= 15 && stride == kernel && padding == 0 &&
         input.size(2) >= kernel && input.size(3) >= kernel && input.size(2) % kernel == 0 &&
         input.size(3) % kernel == 0 && input.numel() <= std::numeric_limits<int32_t>::max();
}

std::pair<at::Tensor, at::Tensor> MaxPoolTanhNchwForward(const at::Tensor& input, int64_t kernel) {
  TORCH_CHECK(MaxPoolTanhNchwSupports(input, kernel, kernel, 0),
              "MaxPoolTanhNchwForward: unsupported input");
  const TiledPool shape = TiledPoolOf(input.sizes(), kernel);
  at::Tensor output =
      at::empty({input.size(0), input.size(1), shape.out_height, shape.out_width}, input.options());
  at::Tensor picks = at::empty(output.sizes(), input.options().dtype(at::kByte));
  const int64_t work = output.numel();
  if (work == 0) return {output, picks};
  const c10::cuda::CUDAGuard guard(input.device());
  const int blocks = pool_window::Blocks(work, input.get_device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (input.scalar_type() == at::kFloat) {
    MaxPoolTanhForward<float><<<blocks, kThreads, 0, stream>>>(
        Data<float>(input), MutableData<float>(output), picks.data_ptr<uint8_t>(), shape, work);
  } else {
    MaxPoolTanhForward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
        Data<__nv_bfloat16>(input), MutableData<__nv_bfloat16>(output), picks.data_ptr<uint8_t>(),
        shape, work);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {output, picks};
}

at::Tensor MaxPoolTanhNchwBackward(const at::Tensor& grad_output, const at::Tensor& output,
                                   const at::Tensor& picks, int64_t kernel) {
  const at::Tensor dy = grad_output.contiguous();
  TORCH_CHECK(dy.is_cuda() && dy.dim() == 4 && dy.scalar_type() == output.scalar_type() &&
                  dy.sizes() == output.sizes() && output.is_contiguous() &&
                  picks.scalar_type() == at::kByte && picks.sizes() == dy.sizes() &&
                  picks.is_contiguous() && picks.device() == dy.device() &&
                  output.device() == dy.device() && kernel >= 1 && kernel <= 15,
              "MaxPoolTanhNchwBackward: unsupported gradient");
  at::Tensor dx = at::empty({dy.size(0), dy.size(1), dy.size(2) * kernel, dy.size(3) * kernel},
                            dy.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t work = dy.numel();
  if (work == 0) return dx;
  const c10::cuda::CUDAGuard guard(dy.device());
  const TiledPool shape = TiledPoolOf(dx.sizes(), kernel);
  const int blocks = pool_window::Blocks(work, dy.get_device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (dy.scalar_type() == at::kFloat) {
    MaxPoolTanhBackward<float><<<blocks, kThreads, 0, stream>>>(
        Data<float>(dy), Data<float>(output), picks.data_ptr<uint8_t>(), MutableData<float>(dx),
        shape, work);
  } else {
    MaxPoolTanhBackward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
        Data<__nv_bfloat16>(dy), Data<__nv_bfloat16>(output), picks.data_ptr<uint8_t>(),
        MutableData<__nv_bfloat16>(dx), shape, work);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dx;
}

}  // namespace traind
