// The window rule of traind's NHWC max pooling, shared by the pool's own kernels
// (max_pool_nhwc.cu) and batch norm's pass that pools its output as it writes it
// (batch_norm_nhwc.cu): which element of a window the forward takes (ATen's pick), and which
// windows' gradients an input element gathers in the backward. Device code: .cu files only.
#ifndef TRAIND_MODELS_CUDA_MAX_POOL_WINDOW_CUH_
#define TRAIND_MODELS_CUDA_MAX_POOL_WINDOW_CUH_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "models/cuda/max_pool_nhwc.h"
#include "models/cuda/vec8.cuh"

namespace traind {
namespace pool_window {

using vec8::kVec;
constexpr int kThreads = 256;

// For each of a thread's 8 channels, the element of its window the forward took,
// kh * kernel + kw.
struct alignas(8) Picks {
  uint8_t v[kVec];
};

struct PoolShape {
  int batch, height, width, channels, out_height, out_width;
  int kernel, stride, padding;
};

inline PoolShape PoolShapeOf(at::IntArrayRef input, at::IntArrayRef output,
                             const MaxPoolGeometry& geometry) {
  return PoolShape{static_cast<int>(input[0]),        static_cast<int>(input[2]),
                   static_cast<int>(input[3]),        static_cast<int>(input[1]),
                   static_cast<int>(output[2]),       static_cast<int>(output[3]),
                   static_cast<int>(geometry.kernel), static_cast<int>(geometry.stride),
                   static_cast<int>(geometry.padding)};
}

// A thread's 8 channels (`group`) of one pixel of a `width` x `height` map, from the index of
// that (pixel, group) in the NHWC tensor taken 8 channels at a time.
struct Slot {
  int group, x, y;
  int64_t n;
};
__device__ __forceinline__ Slot SlotOf(int64_t i, int groups, int width, int height) {
  const int64_t pixel = i / groups;
  return Slot{static_cast<int>(i % groups), static_cast<int>(pixel % width),
              static_cast<int>((pixel / width) % height), pixel / (int64_t{width} * height)};
}

// What the pooled values are: `transform.For(group)` gives the map (held in registers for the
// group's channels) applied in place to each loaded vector before the comparison. AsStored: the
// input's own values, a plain max pool.
struct AsStored {
  struct Bound {
    __device__ __forceinline__ void operator()(float (&/*v*/)[kVec]) const {}
  };
  __device__ __forceinline__ Bound For(int /*group*/) const { return {}; }
};

// One output slot of the forward: the window's maximum of transform(input) by ATen's rule (the
// first maximum in row-major window order, or the window's last NaN), and which element it was.
template <typename T, typename Transform>
__device__ __forceinline__ void PoolWindow(const T* __restrict__ x, const PoolShape& s,
                                           const Slot& o, const Transform& transform,
                                           float (&best)[kVec], Picks& pick) {
  const int h0 = o.y * s.stride - s.padding, w0 = o.x * s.stride - s.padding;
  const int kh_begin = max(0, -h0), kh_end = min(s.kernel, s.height - h0);
  const int kw_begin = max(0, -w0), kw_end = min(s.kernel, s.width - w0);
  const auto map = transform.For(o.group);
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    best[k] = -INFINITY;
    pick.v[k] = static_cast<uint8_t>(kh_begin * s.kernel + kw_begin);
  }
  for (int kh = kh_begin; kh < kh_end; ++kh) {
    for (int kw = kw_begin; kw < kw_end; ++kw) {
      const int64_t offset =
          ((o.n * s.height + h0 + kh) * s.width + w0 + kw) * s.channels + o.group * kVec;
      float v[kVec];
      vec8::Load(x + offset, v);
      map(v);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (v[k] > best[k] || isnan(v[k])) {
          best[k] = v[k];
          pick.v[k] = static_cast<uint8_t>(kh * s.kernel + kw);
        }
      }
    }
  }
}

// The forward over every output slot: y and the picks, each [N, OH, OW, C]. `transform` maps
// the loaded input values in place before they are compared; its results must be values of T,
// so that storing the maximum is exact.
template <typename T, typename Transform>
__global__ void __launch_bounds__(kThreads)
    MaxPoolForwardKernel(const T* __restrict__ x, T* __restrict__ y, Picks* __restrict__ picks,
                         PoolShape s, int64_t work, Transform transform) {
  const int groups = s.channels / kVec;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Slot o = SlotOf(i, groups, s.out_width, s.out_height);
    float best[kVec];
    Picks pick;
    PoolWindow(x, s, o, transform, best, pick);
    vec8::Store(y + i * kVec, best);
    picks[i] = pick;
  }
}

// One input slot of the backward: the sum, in window order, of the output gradients of the
// windows that took this element.
template <typename T>
__device__ __forceinline__ void GatherPicked(const T* __restrict__ dy,
                                             const Picks* __restrict__ picks, const PoolShape& s,
                                             const Slot& in, float (&sum)[kVec]) {
  const int groups = s.channels / kVec;
  const int ih = in.y + s.padding, iw = in.x + s.padding;  // in padded coordinates
  const int oh_begin = ih < s.kernel ? 0 : (ih - s.kernel) / s.stride + 1;
  const int oh_end = min(ih / s.stride + 1, s.out_height);
  const int ow_begin = iw < s.kernel ? 0 : (iw - s.kernel) / s.stride + 1;
  const int ow_end = min(iw / s.stride + 1, s.out_width);
#pragma unroll
  for (int k = 0; k < kVec; ++k) sum[k] = 0.f;
  for (int oh = oh_begin; oh < oh_end; ++oh) {
    for (int ow = ow_begin; ow < ow_end; ++ow) {
      const int here = (ih - oh * s.stride) * s.kernel + (iw - ow * s.stride);
      const int64_t window = ((in.n * s.out_height + oh) * s.out_width + ow) * groups + in.group;
      float grad[kVec];
      vec8::Load(dy + window * kVec, grad);
      const Picks picked = picks[window];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (picked.v[k] == here) sum[k] += grad[k];
      }
    }
  }
}

// Enough blocks of kThreads to fill the device; each thread loops over its share of `work`.
int Blocks(int64_t work, int device);

}  // namespace pool_window
}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_MAX_POOL_WINDOW_CUH_
