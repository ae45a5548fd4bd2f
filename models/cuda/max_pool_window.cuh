// The window rule of traind's NHWC max pooling, shared by the pool's own kernels
// (max_pool_nhwc.cu) and the batch norm's passes that pool its output as they write it and gather
// the pooled gradient back (batch_norm_nhwc.cu): which element of a window the forward takes
// (ATen's pick), and which windows' gradients an input element gathers in the backward, pixel by
// pixel or a tile of pixels at a time. Device code: .cu files only.
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

// The fused batch norm's backward (batch_norm_nhwc.cu) gathers the pool's input gradient in
// tiles of kTile x kTile input pixels, aligned in padded coordinates to a stride of kTile: a
// tile's pixels then share their windows, at most kTileWindows per axis, and the tile reads each
// of them once. For ResNet's stem (3x3 windows, stride 2) a pixel on its own reads 2.25 windows
// on average, a tile 4 for its 4 pixels.
constexpr int kTile = 2;
constexpr int kTileWindows = 2;

// Whether the tiles take a pooling: stride kTile, windows of at most kTile * kTileWindows, so
// that no tile meets more than kTileWindows windows per axis.
inline bool TilesTake(const MaxPoolGeometry& geometry) {
  return geometry.stride == kTile && geometry.kernel <= kTile * kTileWindows;
}

// The tiles over the pool's input, tile (n, ty, tx) holding the padded rows kTile * ty ..
// kTile * ty + kTile - 1 and the columns alike; ty runs over `rows` values from `first_row`.
struct TileGrid {
  int first_row, rows, first_col, cols;
  int64_t count;  // batch * rows * cols
};
inline TileGrid TileGridOf(const PoolShape& s) {
  TileGrid grid{s.padding / kTile, (s.height - 1 + s.padding) / kTile - s.padding / kTile + 1,
                s.padding / kTile, (s.width - 1 + s.padding) / kTile - s.padding / kTile + 1, 0};
  grid.count = int64_t{s.batch} * grid.rows * grid.cols;
  return grid;
}

// For each input pixel of tile `t` (below 2^31) of `grid`, for channel group `group`:
// visit(offset, sum), with the offset of the pixel's group in the NHWC input and `sum` what
// GatherPicked gives it (the same windows in the same order, so the same bits). A window's output
// gradient comes from load_window(window, grad), `window` being the index of the window's 8
// channels in the pooled output taken 8 channels at a time (its element offset / 8).
template <typename LoadWindow, typename Visit>
__device__ __forceinline__ void GatherPickedTile(const Picks* __restrict__ picks,
                                                 const PoolShape& s, const TileGrid& grid,
                                                 uint32_t t, int group, LoadWindow load_window,
                                                 Visit visit) {
  // 32-bit division, several times cheaper than 64-bit.
  const uint32_t rest = t / static_cast<uint32_t>(grid.cols);
  const int tx = grid.first_col + static_cast<int>(t - rest * grid.cols);
  const int ty = grid.first_row + static_cast<int>(rest % static_cast<uint32_t>(grid.rows));
  const int64_t n = rest / static_cast<uint32_t>(grid.rows);
  const int groups = s.channels / kVec;
  // Windows oh_first .. ty (and the columns alike) reach into the tile: window oh covers the
  // padded rows kTile * oh .. kTile * oh + kernel - 1.
  const int reach = (s.kernel - 1) / kTile;
  const int oh_first = ty - reach, ow_first = tx - reach;
  // Window by window in row-major order, each added to the pixels that it took, so that every
  // pixel's sum is in GatherPicked's order; one window's gradient is live at a time.
  float sum[kTile][kTile][kVec];
#pragma unroll
  for (int i = 0; i < kTile; ++i) {
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) sum[i][j][k] = 0.f;
    }
  }
#pragma unroll
  for (int a = 0; a < kTileWindows; ++a) {
    const int oh = oh_first + a;
    if (a > reach || oh < 0 || oh >= s.out_height) continue;
#pragma unroll
    for (int b = 0; b < kTileWindows; ++b) {
      const int ow = ow_first + b;
      if (b > reach || ow < 0 || ow >= s.out_width) continue;
      const int64_t window = ((n * s.out_height + oh) * s.out_width + ow) * groups + group;
      float grad[kVec];
      load_window(window, grad);
      const Picks picked = picks[window];
#pragma unroll
      for (int i = 0; i < kTile; ++i) {
        const int kh = kTile * (ty - oh) + i;  // >= 0: oh <= ty
#pragma unroll
        for (int j = 0; j < kTile; ++j) {
          const int kw = kTile * (tx - ow) + j;
          if (kh >= s.kernel || kw >= s.kernel) continue;
          const int here = kh * s.kernel + kw;
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            if (picked.v[k] == here) sum[i][j][k] += grad[k];
          }
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kTile; ++i) {
    const int y = kTile * ty + i - s.padding;
    if (y < 0 || y >= s.height) continue;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const int x = kTile * tx + j - s.padding;
      if (x < 0 || x >= s.width) continue;
      visit(((n * s.height + y) * s.width + x) * s.channels + group * kVec, sum[i][j]);
    }
  }
}

// Enough blocks of kThreads to fill the device; each thread loops over its share of `work`.
int Blocks(int64_t work, int device);

}  // namespace pool_window
}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_MAX_POOL_WINDOW_CUH_
