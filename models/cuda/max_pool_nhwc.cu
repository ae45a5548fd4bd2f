#include "models/cuda/max_pool_nhwc.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <algorithm>

namespace traind {
namespace {

constexpr int kVec = 8;  // channels per thread
constexpr int kThreads = 256;

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

// kVec consecutive elements as one or two 16-byte accesses.
template <typename T>
struct alignas(16) Packet {
  T v[kVec];
};

struct Shape {
  int batch, height, width, channels, out_height, out_width;
  int kernel, stride, padding;
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolBackward(const T* __restrict__ dy, const int64_t* __restrict__ indices,
                    T* __restrict__ dx, Shape s, int64_t work) {
  const int groups = s.channels / kVec;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int group = static_cast<int>(i % groups);
    const int64_t pixel = i / groups;
    const int iw = static_cast<int>(pixel % s.width);
    const int ih = static_cast<int>((pixel / s.width) % s.height);
    const int64_t n = pixel / (static_cast<int64_t>(s.width) * s.height);
    // The output windows that contain (ih, iw).
    const int oh_begin = ih + s.padding < s.kernel ? 0 : (ih + s.padding - s.kernel) / s.stride + 1;
    const int oh_end = min((ih + s.padding) / s.stride + 1, s.out_height);
    const int ow_begin = iw + s.padding < s.kernel ? 0 : (iw + s.padding - s.kernel) / s.stride + 1;
    const int ow_end = min((iw + s.padding) / s.stride + 1, s.out_width);
    const int64_t target = static_cast<int64_t>(ih) * s.width + iw;
    float sum[kVec] = {};
    for (int oh = oh_begin; oh < oh_end; ++oh) {
      for (int ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t offset =
            ((n * s.out_height + oh) * s.out_width + ow) * s.channels + group * kVec;
        const Packet<T> grad = *reinterpret_cast<const Packet<T>*>(dy + offset);
        const Packet<int64_t> picked = *reinterpret_cast<const Packet<int64_t>*>(indices + offset);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (picked.v[k] == target) sum[k] += ToFloat(grad.v[k]);
        }
      }
    }
    Packet<T> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) out.v[k] = FromFloat<T>(sum[k]);
    *reinterpret_cast<Packet<T>*>(dx + pixel * s.channels + group * kVec) = out;
  }
}

}  // namespace

bool MaxPoolNhwcSupports(const at::Tensor& input) {
  return input.is_cuda() && input.dim() == 4 &&
         (input.scalar_type() == at::kFloat || input.scalar_type() == at::kBFloat16) &&
         input.size(1) % kVec == 0 && input.size(1) > 0 &&
         input.is_contiguous(at::MemoryFormat::ChannelsLast);
}

at::Tensor MaxPoolNhwcBackward(const at::Tensor& grad_output, const at::Tensor& indices,
                               at::IntArrayRef input_sizes, const MaxPoolGeometry& geometry) {
  const auto layout = at::MemoryFormat::ChannelsLast;
  const at::Tensor dy = grad_output.contiguous(layout);
  const at::Tensor picked = indices.contiguous(layout);
  TORCH_CHECK(MaxPoolNhwcSupports(dy) && picked.scalar_type() == at::kLong &&
                  picked.sizes() == dy.sizes() && input_sizes.size() == 4 &&
                  input_sizes[1] == dy.size(1),
              "MaxPoolNhwcBackward: unsupported gradient");
  const Shape shape{static_cast<int>(input_sizes[0]),  static_cast<int>(input_sizes[2]),
                    static_cast<int>(input_sizes[3]),  static_cast<int>(input_sizes[1]),
                    static_cast<int>(dy.size(2)),      static_cast<int>(dy.size(3)),
                    static_cast<int>(geometry.kernel), static_cast<int>(geometry.stride),
                    static_cast<int>(geometry.padding)};
  at::Tensor dx = at::empty(input_sizes, dy.options().memory_format(layout));
  const int64_t work = dx.numel() / kVec;
  if (work == 0) return dx;
  const c10::cuda::CUDAGuard guard(dy.device());
  int multiprocessors = 0;
  C10_CUDA_CHECK(
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, dy.get_device()));
  const int blocks = static_cast<int>(
      std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t{multiprocessors} * 16));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (dy.scalar_type() == at::kFloat) {
    MaxPoolBackward<float><<<blocks, kThreads, 0, stream>>>(
        dy.data_ptr<float>(), picked.data_ptr<int64_t>(), dx.data_ptr<float>(), shape, work);
  } else {
    MaxPoolBackward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(dy.data_ptr()), picked.data_ptr<int64_t>(),
        reinterpret_cast<__nv_bfloat16*>(dx.data_ptr()), shape, work);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dx;
}

}  // namespace traind
