#include "models/cuda/max_pool_nhwc.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

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

struct alignas(8) Picks {
  uint8_t v[kVec];
};

struct Shape {
  int batch, height, width, channels, out_height, out_width;
  int kernel, stride, padding;
};

// Thread i's 8 channels and pixel (of the input or of the output: `width` x `height` maps).
struct Slot {
  int group, x, y;
  int64_t n;
};
__device__ __forceinline__ Slot SlotOf(int64_t i, int groups, int width, int height) {
  const int64_t pixel = i / groups;
  return Slot{static_cast<int>(i % groups), static_cast<int>(pixel % width),
              static_cast<int>((pixel / width) % height), pixel / (int64_t{width} * height)};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolForward(const T* __restrict__ x, T* __restrict__ y, Picks* __restrict__ picks, Shape s,
                   int64_t work) {
  const int groups = s.channels / kVec;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Slot o = SlotOf(i, groups, s.out_width, s.out_height);
    const int h0 = o.y * s.stride - s.padding, w0 = o.x * s.stride - s.padding;
    const int kh_begin = max(0, -h0), kh_end = min(s.kernel, s.height - h0);
    const int kw_begin = max(0, -w0), kw_end = min(s.kernel, s.width - w0);
    float best[kVec];
    Picks pick;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      best[k] = -INFINITY;
      pick.v[k] = static_cast<uint8_t>(kh_begin * s.kernel + kw_begin);
    }
    for (int kh = kh_begin; kh < kh_end; ++kh) {
      for (int kw = kw_begin; kw < kw_end; ++kw) {
        const int64_t offset =
            ((o.n * s.height + h0 + kh) * s.width + w0 + kw) * s.channels + o.group * kVec;
        const Packet<T> in = *reinterpret_cast<const Packet<T>*>(x + offset);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const float v = ToFloat(in.v[k]);
          // ATen's rule: a larger value or any NaN takes the window.
          if (v > best[k] || isnan(v)) {
            best[k] = v;
            pick.v[k] = static_cast<uint8_t>(kh * s.kernel + kw);
          }
        }
      }
    }
    Packet<T> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) out.v[k] = FromFloat<T>(best[k]);  // exact: best is an input
    reinterpret_cast<Packet<T>*>(y)[i] = out;
    picks[i] = pick;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolBackward(const T* __restrict__ dy, const Picks* __restrict__ picks, T* __restrict__ dx,
                    Shape s, int64_t work) {
  const int groups = s.channels / kVec;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Slot in = SlotOf(i, groups, s.width, s.height);
    // The output windows that contain (in.y, in.x).
    const int ih = in.y + s.padding, iw = in.x + s.padding;  // in padded coordinates
    const int oh_begin = ih < s.kernel ? 0 : (ih - s.kernel) / s.stride + 1;
    const int oh_end = min(ih / s.stride + 1, s.out_height);
    const int ow_begin = iw < s.kernel ? 0 : (iw - s.kernel) / s.stride + 1;
    const int ow_end = min(iw / s.stride + 1, s.out_width);
    float sum[kVec] = {};
    for (int oh = oh_begin; oh < oh_end; ++oh) {
      for (int ow = ow_begin; ow < ow_end; ++ow) {
        // Where (in.y, in.x) sits in this window.
        const int here = (ih - oh * s.stride) * s.kernel + (iw - ow * s.stride);
        const int64_t window = (in.n * s.out_height + oh) * s.out_width + ow;
        const Packet<T> grad = reinterpret_cast<const Packet<T>*>(dy)[window * groups + in.group];
        const Picks picked = picks[window * groups + in.group];
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (picked.v[k] == here) sum[k] += ToFloat(grad.v[k]);
        }
      }
    }
    Packet<T> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) out.v[k] = FromFloat<T>(sum[k]);
    reinterpret_cast<Packet<T>*>(dx)[i] = out;
  }
}

bool Aligned(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

Shape ShapeOf(at::IntArrayRef input, at::IntArrayRef output, const MaxPoolGeometry& geometry) {
  return Shape{static_cast<int>(input[0]),        static_cast<int>(input[2]),
               static_cast<int>(input[3]),        static_cast<int>(input[1]),
               static_cast<int>(output[2]),       static_cast<int>(output[3]),
               static_cast<int>(geometry.kernel), static_cast<int>(geometry.stride),
               static_cast<int>(geometry.padding)};
}

// Enough blocks of kThreads to fill the device; each thread loops over its share of `work`.
int Blocks(int64_t work, int device) {
  int multiprocessors = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  return static_cast<int>(
      std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t{multiprocessors} * 16));
}

}  // namespace

bool MaxPoolNhwcSupports(const at::Tensor& input, const MaxPoolGeometry& geometry) {
  return input.is_cuda() && input.dim() == 4 &&
         (input.scalar_type() == at::kFloat || input.scalar_type() == at::kBFloat16) &&
         input.size(1) % kVec == 0 && input.size(1) > 0 &&
         input.is_contiguous(at::MemoryFormat::ChannelsLast) && Aligned(input) &&
         geometry.kernel >= 1 && geometry.kernel <= 15 && geometry.stride >= 1 &&
         geometry.padding >= 0 && 2 * geometry.padding <= geometry.kernel &&
         input.size(2) + 2 * geometry.padding >= geometry.kernel &&
         input.size(3) + 2 * geometry.padding >= geometry.kernel;
}

std::pair<at::Tensor, at::Tensor> MaxPoolNhwcForward(const at::Tensor& input,
                                                     const MaxPoolGeometry& geometry) {
  TORCH_CHECK(MaxPoolNhwcSupports(input, geometry), "MaxPoolNhwcForward: unsupported input");
  const auto layout = at::MemoryFormat::ChannelsLast;
  const auto out_size = [&](int64_t size) {
    return (size + 2 * geometry.padding - geometry.kernel) / geometry.stride + 1;
  };
  const std::vector<int64_t> sizes{input.size(0), input.size(1), out_size(input.size(2)),
                                   out_size(input.size(3))};
  at::Tensor output = at::empty(sizes, input.options().memory_format(layout));
  at::Tensor picks = at::empty(sizes, input.options().dtype(at::kByte).memory_format(layout));
  const int64_t work = output.numel() / kVec;
  if (work == 0) return {output, picks};
  const c10::cuda::CUDAGuard guard(input.device());
  const Shape shape = ShapeOf(input.sizes(), output.sizes(), geometry);
  const int blocks = Blocks(work, input.get_device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  auto* picked = reinterpret_cast<Picks*>(picks.data_ptr());
  if (input.scalar_type() == at::kFloat) {
    MaxPoolForward<float><<<blocks, kThreads, 0, stream>>>(
        input.data_ptr<float>(), output.data_ptr<float>(), picked, shape, work);
  } else {
    MaxPoolForward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(input.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(output.data_ptr()), picked, shape, work);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {output, picks};
}

at::Tensor MaxPoolNhwcBackward(const at::Tensor& grad_output, const at::Tensor& picks,
                               at::IntArrayRef input_sizes, const MaxPoolGeometry& geometry) {
  const auto layout = at::MemoryFormat::ChannelsLast;
  at::Tensor dy = grad_output.contiguous(layout);
  if (!Aligned(dy)) dy = dy.clone(layout);  // a fresh allocation is aligned
  TORCH_CHECK(input_sizes.size() == 4 && input_sizes[1] == dy.size(1) &&
                  MaxPoolNhwcSupports(dy, MaxPoolGeometry{1, 1, 0}) &&
                  picks.scalar_type() == at::kByte && picks.sizes() == dy.sizes() &&
                  picks.is_contiguous(layout) && picks.device() == dy.device(),
              "MaxPoolNhwcBackward: unsupported gradient");
  at::Tensor dx = at::empty(input_sizes, dy.options().memory_format(layout));
  const int64_t work = dx.numel() / kVec;
  if (work == 0) return dx;
  const c10::cuda::CUDAGuard guard(dy.device());
  const Shape shape = ShapeOf(input_sizes, dy.sizes(), geometry);
  const int blocks = Blocks(work, dy.get_device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const auto* picked = reinterpret_cast<const Picks*>(picks.data_ptr());
  if (dy.scalar_type() == at::kFloat) {
    MaxPoolBackward<float><<<blocks, kThreads, 0, stream>>>(dy.data_ptr<float>(), picked,
                                                            dx.data_ptr<float>(), shape, work);
  } else {
    MaxPoolBackward<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(dy.data_ptr()), picked,
        reinterpret_cast<__nv_bfloat16*>(dx.data_ptr()), shape, work);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dx;
}

}  // namespace traind
