#include "models/cuda/batch_norm_nhwc.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "models/cuda/max_pool_window.cuh"
#include "models/cuda/tensor_data.cuh"
#include "models/cuda/vec8.cuh"

namespace traind {
namespace {

// The input is a [rows = N*H*W, C] matrix. Every kernel gives each thread one group of kVec
// channels (one 16-byte load) and a strided set of rows (in the pooled backward, of 2 x 2 tiles of
// rows): threadIdx.x / blockIdx.x pick the group, threadIdx.y / blockIdx.y the rows. A warp then
// reads whole consecutive rows, and each thread keeps its channels' statistics or coefficients in
// registers.
using vec8::kVec;
using vec8::Load;
using vec8::Relu;
using vec8::Store;
constexpr int kThreads = 256;

// Chan et al.'s merge of Welford states (count n, mean, sum of squared deviations m2) for
// channels that share one count.
template <int kChannels>
__device__ __forceinline__ void MergeWelford(float& n, float* mean, float* m2, float other_n,
                                             const float* other_mean, const float* other_m2) {
  if (other_n == 0.f) return;
  const float total = n + other_n;
  const float ratio = other_n / total;
  const float cross = n * ratio;
#pragma unroll
  for (int k = 0; k < kChannels; ++k) {
    const float delta = other_mean[k] - mean[k];
    mean[k] += delta * ratio;
    m2[k] += other_m2[k] + delta * delta * cross;
  }
  n = total;
}

struct Layout {
  int64_t rows;
  int channels;
  int groups;  // channels / kVec
};

// Calls visit(offset) for each of this thread's rows, with the offset of its channel group in
// that row.
template <typename Visit>
__device__ __forceinline__ void ForEachRow(const Layout& layout, int group, Visit visit) {
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
#pragma unroll 4
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < layout.rows;
       r += stride) {
    visit(r * layout.channels + group * kVec);
  }
}

// Per block: Welford statistics of its rows for its channel groups -> partials [gridDim.y, C].
template <typename T>
__global__ void __launch_bounds__(kThreads)
    WelfordPartials(const T* __restrict__ x, Layout layout, float* __restrict__ part_n,
                    float* __restrict__ part_mean, float* __restrict__ part_m2) {
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  float n = 0.f, mean[kVec] = {}, m2[kVec] = {};
  if (group < layout.groups) {
    ForEachRow(layout, group, [&](int64_t offset) {
      float v[kVec];
      Load(x + offset, v);
      n += 1.f;
      const float inverse = __frcp_rn(n);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float delta = v[k] - mean[k];
        mean[k] += delta * inverse;
        m2[k] += delta * (v[k] - mean[k]);
      }
    });
  }
  // Tree merge over threadIdx.y (blockDim.y is a power of two).
  extern __shared__ float shared[];
  constexpr int kState = 1 + 2 * kVec;
  for (int half = blockDim.y / 2; half > 0; half /= 2) {
    if (threadIdx.y >= half && threadIdx.y < 2 * half) {
      float* mine = shared + ((threadIdx.y - half) * blockDim.x + threadIdx.x) * kState;
      mine[0] = n;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        mine[1 + k] = mean[k];
        mine[1 + kVec + k] = m2[k];
      }
    }
    __syncthreads();
    if (threadIdx.y < half) {
      const float* other = shared + (threadIdx.y * blockDim.x + threadIdx.x) * kState;
      MergeWelford<kVec>(n, mean, m2, other[0], other + 1, other + 1 + kVec);
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && group < layout.groups) {
    const int64_t base = static_cast<int64_t>(blockIdx.y) * layout.channels + group * kVec;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      part_n[base + k] = n;
      part_mean[base + k] = mean[k];
      part_m2[base + k] = m2[k];
    }
  }
}

// One block per channel: merges the partials, saves mean and 1/std for the backward pass,
// updates the running statistics and writes the per-channel scale and shift of the output.
__global__ void __launch_bounds__(kThreads)
    FinalizeStatistics(const float* __restrict__ part_n, const float* __restrict__ part_mean,
                       const float* __restrict__ part_m2, int parts, int channels,
                       const float* __restrict__ weight, const float* __restrict__ bias,
                       float* __restrict__ running_mean, float* __restrict__ running_var,
                       float momentum, float eps, float* __restrict__ save_mean,
                       float* __restrict__ save_invstd, float* __restrict__ scale,
                       float* __restrict__ shift) {
  const int c = blockIdx.x;
  float n = 0.f, mean = 0.f, m2 = 0.f;
  for (int p = threadIdx.x; p < parts; p += blockDim.x) {
    const int64_t i = static_cast<int64_t>(p) * channels + c;
    MergeWelford<1>(n, &mean, &m2, part_n[i], &part_mean[i], &part_m2[i]);
  }
  __shared__ float shared_n[kThreads], shared_mean[kThreads], shared_m2[kThreads];
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x >= half && threadIdx.x < 2 * half) {
      shared_n[threadIdx.x - half] = n;
      shared_mean[threadIdx.x - half] = mean;
      shared_m2[threadIdx.x - half] = m2;
    }
    __syncthreads();
    if (threadIdx.x < half) {
      MergeWelford<1>(n, &mean, &m2, shared_n[threadIdx.x], &shared_mean[threadIdx.x],
                      &shared_m2[threadIdx.x]);
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  const float invstd = rsqrtf(m2 / n + eps);
  save_mean[c] = mean;
  save_invstd[c] = invstd;
  running_mean[c] = (1.f - momentum) * running_mean[c] + momentum * mean;
  running_var[c] = (1.f - momentum) * running_var[c] + momentum * (m2 / (n - 1.f));
  scale[c] = weight[c] * invstd;
  shift[c] = bias[c] - mean * weight[c] * invstd;
}

// y = x * scale + shift per channel, plus the residual with kResidual, then max(y, 0) with
// kRelu. The backward kernels recompute y with the same fused multiply-add to know where the ReLU
// passed the gradient (without a residual; with one they read the output).
template <typename T, bool kRelu, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    ScaleShift(const T* __restrict__ x, const T* __restrict__ residual, T* __restrict__ y,
               Layout layout, const float* __restrict__ scale, const float* __restrict__ shift) {
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  if (group >= layout.groups) return;
  float a[kVec], b[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    a[k] = scale[group * kVec + k];
    b[k] = shift[group * kVec + k];
  }
  ForEachRow(layout, group, [&](int64_t offset) {
    float v[kVec], r[kVec];
    Load(x + offset, v);
    if (kResidual) Load(residual + offset, r);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      v[k] = __fmaf_rn(v[k], a[k], b[k]);
      if (kResidual) v[k] += r[k];
      if (kRelu) v[k] = Relu(v[k]);
    }
    Store(y + offset, v);
  });
}

// Where a backward kernel reads the gradient of the batch norm's output (before its ReLU's
// mask): `dy` at the input's offsets, or, with `picks`, a max pool's output gradient (`dy` then is
// [N, OH, OW, C] of `pool`) gathered through the pool's picks tile by tile: the input gradient of
// the pool, as its own backward would have stored it (rounded to T). With `dy2`, the gradient of
// the output's twin (laid out as dy), the two are added as they are loaded and rounded to T, as
// autograd's own addition of them would have stored the sum.
template <typename T>
struct GradientSource {
  const T* dy;
  const T* dy2;
  const pool_window::Picks* picks;
  pool_window::PoolShape pool;
  pool_window::TileGrid tiles;
};

// How a backward kernel reads its output gradient from a GradientSource: at the input's offsets
// or gathered through a pool's picks, with the twin's gradient added or without. Compile-time, so
// that a kernel without a twin keeps its registers.
enum class Read { kDirect, kDirectTwin, kPooled, kPooledTwin };
__host__ __device__ constexpr bool Pooled(Read read) {
  return read == Read::kPooled || read == Read::kPooledTwin;
}
__host__ __device__ constexpr bool Twin(Read read) {
  return read == Read::kDirectTwin || read == Read::kPooledTwin;
}

// g = the kVec values of dy at `offset` (with kTwin + dy2's, rounded to T).
template <bool kTwin, typename T>
__device__ __forceinline__ void LoadOutputGradient(const GradientSource<T>& source, int64_t offset,
                                                   float (&g)[kVec]) {
  Load(source.dy + offset, g);
  if constexpr (kTwin) {
    float other[kVec];
    Load(source.dy2 + offset, other);
#pragma unroll
    for (int k = 0; k < kVec; ++k) g[k] += other[k];
    vec8::RoundTo<T>(g);
  }
}

// The output pass pooled as it goes (NhwcBatchNormReluMaxPoolForward): each input element the
// pool's window reads becomes relu(x * scale + shift), rounded to T as ScaleShift stores it,
// before the comparison; the full-size output is never written.
template <typename T>
struct ScaleShiftRelu {
  const float* scale;
  const float* shift;
  struct Bound {
    float a[kVec], b[kVec];
    __device__ __forceinline__ void operator()(float (&v)[kVec]) const {
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[k] = Relu(__fmaf_rn(v[k], a[k], b[k]));
      vec8::RoundTo<T>(v);
    }
  };
  __device__ __forceinline__ Bound For(int group) const {
    Bound bound;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      bound.a[k] = scale[group * kVec + k];
      bound.b[k] = shift[group * kVec + k];
    }
    return bound;
  }
};

// Calls visit(offset, g) for each element of this thread's share, g its output gradient from
// `source` read as kRead. Without a pool the share is ForEachRow's; with one, it is a strided set
// of the pool's input tiles (pool_window::GatherPickedTile), which every backward pass gathers anew
// rather than one pass writing the gathered gradient for the other: that would move 822 MB more
// each way for ResNet-18's stem in fp32, where gathering again reads the 205 MB pooled gradient
// and 51 MB of picks. (On the H200, the step took 23.67 ms with pixel-by-pixel gathering written
// once, 23.14 ms with tiles gathered twice; tiles written once were not measured.)
template <Read kRead, typename T, typename Visit>
__device__ __forceinline__ void ForEachGradient(const Layout& layout,
                                                const GradientSource<T>& source, int group,
                                                Visit visit) {
  if constexpr (Pooled(kRead)) {
    const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t t = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
         t < source.tiles.count; t += stride) {
      pool_window::GatherPickedTile(
          source.picks, source.pool, source.tiles, static_cast<uint32_t>(t), group,
          [&](int64_t window, float(&grad)[kVec]) {
            LoadOutputGradient<Twin(kRead)>(source, window * kVec, grad);
          },
          [&](int64_t offset, float(&g)[kVec]) {
            vec8::RoundTo<T>(g);
            visit(offset, g);
          });
    }
  } else {
    ForEachRow(layout, group, [&](int64_t offset) {
      float g[kVec];
      LoadOutputGradient<Twin(kRead)>(source, offset, g);
      visit(offset, g);
    });
  }
}

// g where the forward's ReLU passed, recomputed from the input v with the forward's own fused
// multiply-add, else 0.
__device__ __forceinline__ void MaskByRecomputedRelu(const float (&v)[kVec],
                                                     const float (&scale)[kVec],
                                                     const float (&shift)[kVec], float (&g)[kVec]) {
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    if (__fmaf_rn(v[k], scale[k], shift[k]) <= 0.f) g[k] = 0.f;
  }
}

// Where the gradient reaching the batch norm is masked by a ReLU after it: nowhere, where the
// output recomputed from x was cut, or where the forward's output (read back) is zero or below
// (a NaN output passes, as with torch.relu).
enum class Mask { kNone, kRecomputed, kFromOutput };

// Per block: sums of dy and of dy * (x - mean) over its rows -> partials [gridDim.y, C]. With
// Mask::kFromOutput (a batch norm whose output had a residual added before the ReLU) the masked
// gradient is also written to `masked`: it is the residual's gradient and the input gradient's dy.
// kRead: how dy is read (a pooled one, gathered through a max pool's picks, with
// Mask::kRecomputed).
template <typename T, Mask kMask, Read kRead>
__global__ void __launch_bounds__(kThreads)
    GradientSumPartials(GradientSource<T> source, const T* __restrict__ x,
                        const T* __restrict__ output, T* __restrict__ masked, Layout layout,
                        const float* __restrict__ mean, const float* __restrict__ scale,
                        const float* __restrict__ shift, float* __restrict__ part_sum_dy,
                        float* __restrict__ part_sum_dy_xmu) {
  constexpr bool kRecompute = kMask == Mask::kRecomputed;
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  float sum_dy[kVec] = {}, sum_dy_xmu[kVec] = {};
  if (group < layout.groups) {
    float mu[kVec], a[kVec], b[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      mu[k] = mean[group * kVec + k];
      a[k] = kRecompute ? scale[group * kVec + k] : 0.f;
      b[k] = kRecompute ? shift[group * kVec + k] : 0.f;
    }
    ForEachGradient<kRead>(layout, source, group, [&](int64_t offset, float(&g)[kVec]) {
      float v[kVec];
      Load(x + offset, v);
      if constexpr (kRecompute) MaskByRecomputedRelu(v, a, b, g);
      if constexpr (kMask == Mask::kFromOutput) {
        float y[kVec];
        Load(output + offset, y);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          if (y[k] <= 0.f) g[k] = 0.f;  // as torch.relu's backward: a NaN output passes it
        }
        Store(masked + offset, g);
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        sum_dy[k] += g[k];
        sum_dy_xmu[k] += g[k] * (v[k] - mu[k]);
      }
    });
  }
  extern __shared__ float shared[];
  constexpr int kState = 2 * kVec;
  for (int half = blockDim.y / 2; half > 0; half /= 2) {
    if (threadIdx.y >= half && threadIdx.y < 2 * half) {
      float* mine = shared + ((threadIdx.y - half) * blockDim.x + threadIdx.x) * kState;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        mine[k] = sum_dy[k];
        mine[kVec + k] = sum_dy_xmu[k];
      }
    }
    __syncthreads();
    if (threadIdx.y < half) {
      const float* other = shared + (threadIdx.y * blockDim.x + threadIdx.x) * kState;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        sum_dy[k] += other[k];
        sum_dy_xmu[k] += other[kVec + k];
      }
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && group < layout.groups) {
    const int64_t base = static_cast<int64_t>(blockIdx.y) * layout.channels + group * kVec;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      part_sum_dy[base + k] = sum_dy[k];
      part_sum_dy_xmu[base + k] = sum_dy_xmu[k];
    }
  }
}

// One block per channel: the parameter gradients and the input gradient's coefficients,
//   dx = a * dy + b * (x - mean) + c,  a = w * invstd,  b = -a * invstd^2 * sum(dy (x - mean)) / M,
//   c = -a * sum(dy) / M.
__global__ void __launch_bounds__(kThreads)
    FinalizeGradients(const float* __restrict__ part_sum_dy,
                      const float* __restrict__ part_sum_dy_xmu, int parts, int channels,
                      float rows, const float* __restrict__ weight,
                      const float* __restrict__ invstd, float* __restrict__ grad_weight,
                      float* __restrict__ grad_bias, float* __restrict__ coefficients) {
  const int c = blockIdx.x;
  float sum_dy = 0.f, sum_dy_xmu = 0.f;
  for (int p = threadIdx.x; p < parts; p += blockDim.x) {
    const int64_t i = static_cast<int64_t>(p) * channels + c;
    sum_dy += part_sum_dy[i];
    sum_dy_xmu += part_sum_dy_xmu[i];
  }
  __shared__ float shared_dy[kThreads], shared_dy_xmu[kThreads];
  shared_dy[threadIdx.x] = sum_dy;
  shared_dy_xmu[threadIdx.x] = sum_dy_xmu;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      shared_dy[threadIdx.x] += shared_dy[threadIdx.x + half];
      shared_dy_xmu[threadIdx.x] += shared_dy_xmu[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  sum_dy = shared_dy[0];
  sum_dy_xmu = shared_dy_xmu[0];
  const float s = invstd[c];
  const float a = weight[c] * s;
  grad_weight[c] = sum_dy_xmu * s;
  grad_bias[c] = sum_dy;
  coefficients[c] = a;
  coefficients[channels + c] = -a * s * s * sum_dy_xmu / rows;
  coefficients[2 * channels + c] = -a * sum_dy / rows;
}

// dx from the output gradient in `source` (read as kRead; with kRelu masked by the recomputed
// ReLU) and the coefficients.
template <typename T, bool kRelu, Read kRead>
__global__ void __launch_bounds__(kThreads)
    InputGradient(GradientSource<T> source, const T* __restrict__ x, T* __restrict__ dx,
                  Layout layout, const float* __restrict__ mean, const float* __restrict__ scale,
                  const float* __restrict__ shift, const float* __restrict__ coefficients) {
  const int group = blockIdx.x * blockDim.x + threadIdx.x;
  if (group >= layout.groups) return;
  float mu[kVec], a[kVec], b[kVec], c[kVec], forward_scale[kVec], forward_shift[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const int channel = group * kVec + k;
    mu[k] = mean[channel];
    forward_scale[k] = kRelu ? scale[channel] : 0.f;
    forward_shift[k] = kRelu ? shift[channel] : 0.f;
    a[k] = coefficients[channel];
    b[k] = coefficients[layout.channels + channel];
    c[k] = coefficients[2 * layout.channels + channel];
  }
  ForEachGradient<kRead>(layout, source, group, [&](int64_t offset, float(&g)[kVec]) {
    float v[kVec];
    Load(x + offset, v);
    if constexpr (kRelu) MaskByRecomputedRelu(v, forward_scale, forward_shift, g);
#pragma unroll
    for (int k = 0; k < kVec; ++k) v[k] = a[k] * g[k] + b[k] * (v[k] - mu[k]) + c[k];
    Store(dx + offset, v);
  });
}

// Blocks of 256 threads: up to 32 channel groups wide, the rest rows (or the pooled backward's
// tiles); enough blocks for about eight per multiprocessor, each thread then looping over its
// share of the `rows`.
struct LaunchShape {
  dim3 grid, block;
};

LaunchShape PlanLaunch(const Layout& layout, int64_t rows, int device) {
  const int width = std::min(layout.groups, 32);
  int height = 1;
  while (height * 2 * width <= kThreads) height *= 2;
  // ATen caches the device properties: no driver call per launch.
  const int multiprocessors = at::cuda::getDeviceProperties(device)->multiProcessorCount;
  const int columns = (layout.groups + width - 1) / width;
  const int64_t wanted = std::max<int64_t>(1, int64_t{multiprocessors} * 8 / columns);
  const int64_t needed = (rows + height - 1) / height;
  const int row_blocks = static_cast<int>(std::min<int64_t>({wanted, needed, 65535}));
  return {dim3(columns, row_blocks), dim3(width, height)};
}

Layout LayoutOf(const at::Tensor& input) {
  const int channels = static_cast<int>(input.size(1));
  return {input.numel() / channels, channels, channels / kVec};
}

// What the forward and the backward pass both set up: the layout, the input's device and its
// current stream, the launch shape for kernels that visit `rows` rows each (the input's, where
// negative), and `arrays` per-row-block partial results of [row blocks, C] fp32 that the
// finalising kernel merges.
struct Pass {
  Pass(const at::Tensor& input, int arrays, int64_t rows = -1)
      : layout(LayoutOf(input)),
        guard(input.device()),
        stream(c10::cuda::getCurrentCUDAStream()),
        shape(PlanLaunch(layout, rows < 0 ? layout.rows : rows, input.get_device())),
        partials(at::empty({arrays, shape.grid.y, layout.channels},
                           input.options().dtype(at::kFloat))) {}

  float* partial(int i) {
    return partials.data_ptr<float>() + int64_t{i} * shape.grid.y * layout.channels;
  }
  int row_blocks() const { return static_cast<int>(shape.grid.y); }
  // Shared memory for a block whose threads each keep `floats` values.
  size_t shared_bytes(int floats) const {
    return size_t{shape.block.x} * shape.block.y * floats * sizeof(float);
  }

  const Layout layout;
  const c10::cuda::CUDAGuard guard;
  const cudaStream_t stream;
  const LaunchShape shape;
  at::Tensor partials;
};

void CheckParameter(const at::Tensor& t, int channels, const char* name) {
  TORCH_CHECK(
      t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() == channels,
      "NhwcBatchNorm: ", name, " must be a contiguous CUDA float tensor of ", channels,
      " elements");
}

// What the batch norm's own passes do after normalising: nothing, a ReLU, a residual add and a
// ReLU, or a ReLU and a max pool.
struct Epilogue {
  bool relu = false;
  at::Tensor residual;  // the forward's residual (with relu)
  at::Tensor output;    // the backward's: that forward's output, for the ReLU's mask
  const MaxPoolGeometry* pool = nullptr;  // with relu
  at::Tensor picks;                       // with pool: the forward writes them, the backward reads
  at::Tensor twin_grad;  // the backward's: the gradient of the output's twin, laid out as dy
};

// The forward's output pass pooled: writes the pooled output and the picks.
template <typename T>
void LaunchPooledOutput(const Pass& pass, const at::Tensor& input, const Epilogue& epilogue,
                        const float* scale, const float* shift, at::Tensor& output) {
  const int64_t work = output.numel() / kVec;
  if (work == 0) return;
  pool_window::MaxPoolForwardKernel<<<pool_window::Blocks(work, input.get_device()),
                                      pool_window::kThreads, 0, pass.stream>>>(
      Data<T>(input), MutableData<T>(output),
      reinterpret_cast<pool_window::Picks*>(epilogue.picks.data_ptr()),
      pool_window::PoolShapeOf(input.sizes(), output.sizes(), *epilogue.pool), work,
      ScaleShiftRelu<T>{scale, shift});
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The forward pass for activations of type T: statistics, then the output pass (scale, shift and
// the epilogue).
template <typename T>
void LaunchForward(Pass& pass, const at::Tensor& input, const at::Tensor& weight,
                   const at::Tensor& bias, at::Tensor& running_mean, at::Tensor& running_var,
                   double momentum, double eps, const Epilogue& epilogue, float* channel,
                   at::Tensor& output) {
  const Layout& layout = pass.layout;
  WelfordPartials<T>
      <<<pass.shape.grid, pass.shape.block, pass.shared_bytes(1 + 2 * kVec), pass.stream>>>(
          Data<T>(input), layout, pass.partial(0), pass.partial(1), pass.partial(2));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const float* scale = channel + 2 * layout.channels;
  const float* shift = channel + 3 * layout.channels;
  FinalizeStatistics<<<layout.channels, kThreads, 0, pass.stream>>>(
      pass.partial(0), pass.partial(1), pass.partial(2), pass.row_blocks(), layout.channels,
      weight.data_ptr<float>(), bias.data_ptr<float>(), running_mean.data_ptr<float>(),
      running_var.data_ptr<float>(), static_cast<float>(momentum), static_cast<float>(eps), channel,
      channel + layout.channels, channel + 2 * layout.channels, channel + 3 * layout.channels);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (epilogue.pool != nullptr) {
    LaunchPooledOutput<T>(pass, input, epilogue, scale, shift, output);
    return;
  }
  const bool add = epilogue.residual.defined();
  const auto scale_shift = add             ? ScaleShift<T, true, true>
                           : epilogue.relu ? ScaleShift<T, true, false>
                                           : ScaleShift<T, false, false>;
  scale_shift<<<pass.shape.grid, pass.shape.block, 0, pass.stream>>>(
      Data<T>(input), add ? Data<T>(epilogue.residual) : nullptr, MutableData<T>(output), layout,
      scale, shift);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The backward's kernels for an epilogue, reading the output gradient with its twin's (kTwin) or
// without. A twin comes only with a residual's add or a pool (the public functions check), and
// with the add the input gradient reads the sums pass's masked gradient, never a twin.
template <typename T, bool kTwin>
auto SumsKernel(const Epilogue& epilogue) {
  using Kernel = decltype(&GradientSumPartials<T, Mask::kNone, Read::kDirect>);
  if (epilogue.pool != nullptr) {
    return Kernel{GradientSumPartials < T, Mask::kRecomputed,
                  kTwin ? Read::kPooledTwin : Read::kPooled > };
  }
  if (epilogue.output.defined()) {
    return Kernel{GradientSumPartials < T, Mask::kFromOutput,
                  kTwin ? Read::kDirectTwin : Read::kDirect > };
  }
  if constexpr (kTwin) {
    return Kernel{nullptr};
  } else {
    return epilogue.relu ? Kernel{GradientSumPartials<T, Mask::kRecomputed, Read::kDirect>}
                         : Kernel{GradientSumPartials<T, Mask::kNone, Read::kDirect>};
  }
}
template <typename T, bool kTwin>
auto InputGradientKernel(const Epilogue& epilogue) {
  using Kernel = decltype(&InputGradient<T, false, Read::kDirect>);
  if (epilogue.pool != nullptr) {
    return Kernel{InputGradient < T, true, kTwin ? Read::kPooledTwin : Read::kPooled > };
  }
  if (epilogue.output.defined()) return Kernel{InputGradient<T, false, Read::kDirect>};
  if constexpr (kTwin) {
    return Kernel{nullptr};
  } else {
    return epilogue.relu ? Kernel{InputGradient<T, true, Read::kDirect>}
                         : Kernel{InputGradient<T, false, Read::kDirect>};
  }
}

// The backward pass for activations of type T: the two sums, then the input gradient. With the
// forward's `output` (a residual was added; `masked` is then the residual's gradient), the sums
// pass writes the masked gradient into `masked` and the input gradient reads it as its dy, with no
// mask of its own. With a pool, both passes gather the pooled gradient through the picks
// (`source`, with its tiles) and mask it by the recomputed ReLU.
template <typename T>
void LaunchBackward(Pass& pass, const at::Tensor& grad_output, const at::Tensor& input,
                    const at::Tensor& weight, const at::Tensor& mean, const at::Tensor& invstd,
                    const at::Tensor& scale, const at::Tensor& shift, const Epilogue& epilogue,
                    at::Tensor& parameter_grads, at::Tensor& coefficients, at::Tensor& grad_input,
                    at::Tensor& masked) {
  const Layout& layout = pass.layout;
  const bool add = epilogue.output.defined();
  const bool twin = epilogue.twin_grad.defined();
  GradientSource<T> source{
      Data<T>(grad_output), twin ? Data<T>(epilogue.twin_grad) : nullptr, nullptr, {}, {}};
  if (epilogue.pool != nullptr) {
    source.picks = reinterpret_cast<const pool_window::Picks*>(epilogue.picks.data_ptr());
    source.pool = pool_window::PoolShapeOf(input.sizes(), grad_output.sizes(), *epilogue.pool);
    source.tiles = pool_window::TileGridOf(source.pool);
  }
  const auto sums = twin ? SumsKernel<T, true>(epilogue) : SumsKernel<T, false>(epilogue);
  sums<<<pass.shape.grid, pass.shape.block, pass.shared_bytes(2 * kVec), pass.stream>>>(
      source, Data<T>(input), add ? Data<T>(epilogue.output) : nullptr,
      add ? MutableData<T>(masked) : nullptr, layout, mean.data_ptr<float>(),
      scale.data_ptr<float>(), shift.data_ptr<float>(), pass.partial(0), pass.partial(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  FinalizeGradients<<<layout.channels, kThreads, 0, pass.stream>>>(
      pass.partial(0), pass.partial(1), pass.row_blocks(), layout.channels,
      static_cast<float>(layout.rows), weight.data_ptr<float>(), invstd.data_ptr<float>(),
      parameter_grads[0].data_ptr<float>(), parameter_grads[1].data_ptr<float>(),
      coefficients.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const GradientSource<T> masked_source{add ? Data<T>(masked) : nullptr, nullptr, nullptr, {}, {}};
  const auto input_gradient =
      twin ? InputGradientKernel<T, true>(epilogue) : InputGradientKernel<T, false>(epilogue);
  input_gradient<<<pass.shape.grid, pass.shape.block, 0, pass.stream>>>(
      add ? masked_source : source, Data<T>(input), MutableData<T>(grad_input), layout,
      mean.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(),
      coefficients.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool NhwcBatchNormSupports(const at::Tensor& input) {
  return input.is_cuda() &&
         (input.scalar_type() == at::kBFloat16 || input.scalar_type() == at::kFloat) &&
         input.dim() == 4 && input.size(1) % kVec == 0 && input.size(1) > 0 &&
         input.is_contiguous(at::MemoryFormat::ChannelsLast) && vec8::Aligned(input) &&
         input.numel() / input.size(1) > 1;
}

bool NhwcBatchNormReluMaxPoolSupports(const at::Tensor& input, const MaxPoolGeometry& pool) {
  return NhwcBatchNormSupports(input) && MaxPoolNhwcSupports(input, pool) &&
         pool_window::TilesTake(pool) &&
         input.numel() / input.size(1) <= std::numeric_limits<int32_t>::max();
}

namespace {
// Whether `t` can be read at the input's offsets: the kernels take it, on the input's device,
// with its sizes and type.
bool LaidOutLike(const at::Tensor& t, const at::Tensor& input) {
  return NhwcBatchNormSupports(t) && t.device() == input.device() && t.sizes() == input.sizes() &&
         t.scalar_type() == input.scalar_type();
}

// Whether `t` is an NHWC tensor of the pooled output's sizes on the input's device, the kernels'
// layout (channels_last, 16-byte aligned), of `type`.
bool LaidOutLikePooled(const at::Tensor& t, const at::Tensor& input, const MaxPoolGeometry& pool,
                       at::ScalarType type) {
  return t.device() == input.device() && t.scalar_type() == type &&
         t.sizes() == at::IntArrayRef(MaxPoolOutputSizes(input.sizes(), pool)) &&
         t.is_contiguous(at::MemoryFormat::ChannelsLast) && vec8::Aligned(t);
}

// The forward for a checked input and epilogue, its output of `output_sizes`.
NhwcBatchNormForwardResult RunForward(const at::Tensor& input, const at::Tensor& weight,
                                      const at::Tensor& bias, at::Tensor& running_mean,
                                      at::Tensor& running_var, double momentum, double eps,
                                      const Epilogue& epilogue, at::IntArrayRef output_sizes) {
  Pass pass(input, /*arrays=*/3);  // Welford count, mean and m2 per row block and channel
  const Layout& layout = pass.layout;
  CheckParameter(weight, layout.channels, "weight");
  CheckParameter(bias, layout.channels, "bias");
  CheckParameter(running_mean, layout.channels, "running_mean");
  CheckParameter(running_var, layout.channels, "running_var");
  // Per channel: mean, invstd, scale, shift.
  at::Tensor per_channel = at::empty({4, layout.channels}, input.options().dtype(at::kFloat));
  at::Tensor output =
      at::empty(output_sizes, input.options().memory_format(at::MemoryFormat::ChannelsLast));
  const auto forward =
      input.scalar_type() == at::kFloat ? LaunchForward<float> : LaunchForward<__nv_bfloat16>;
  forward(pass, input, weight, bias, running_mean, running_var, momentum, eps, epilogue,
          per_channel.data_ptr<float>(), output);
  return {output, per_channel[0], per_channel[1], per_channel[2], per_channel[3], epilogue.picks};
}

// The backward for a checked input, gradient and epilogue.
NhwcBatchNormBackwardResult RunBackward(const at::Tensor& grad_output, const at::Tensor& input,
                                        const at::Tensor& weight, const at::Tensor& mean,
                                        const at::Tensor& invstd, const at::Tensor& scale,
                                        const at::Tensor& shift, const Epilogue& epilogue) {
  // The pooled backward's kernels visit the pool's input tiles, not the rows.
  const int64_t rows =
      epilogue.pool == nullptr
          ? -1
          : pool_window::TileGridOf(
                pool_window::PoolShapeOf(input.sizes(), grad_output.sizes(), *epilogue.pool))
                .count;
  // sum(dy) and sum(dy * (x - mean)) per row block and channel
  Pass pass(input, /*arrays=*/2, rows);
  const Layout& layout = pass.layout;
  CheckParameter(weight, layout.channels, "weight");
  CheckParameter(mean, layout.channels, "mean");
  CheckParameter(invstd, layout.channels, "invstd");
  CheckParameter(scale, layout.channels, "scale");
  CheckParameter(shift, layout.channels, "shift");
  const auto fp32 = input.options().dtype(at::kFloat);
  at::Tensor parameter_grads = at::empty({2, layout.channels}, fp32);
  at::Tensor coefficients = at::empty({3, layout.channels}, fp32);
  at::Tensor grad_input = at::empty_like(input, at::MemoryFormat::ChannelsLast);
  at::Tensor masked;  // the residual's gradient, with an output
  if (epilogue.output.defined()) masked = at::empty_like(input, at::MemoryFormat::ChannelsLast);
  const auto backward =
      input.scalar_type() == at::kFloat ? LaunchBackward<float> : LaunchBackward<__nv_bfloat16>;
  backward(pass, grad_output, input, weight, mean, invstd, scale, shift, epilogue, parameter_grads,
           coefficients, grad_input, masked);
  return {grad_input, parameter_grads[0], parameter_grads[1], masked};
}
}  // namespace

NhwcBatchNormForwardResult NhwcBatchNormForward(const at::Tensor& input, const at::Tensor& weight,
                                                const at::Tensor& bias, at::Tensor& running_mean,
                                                at::Tensor& running_var, double momentum,
                                                double eps, bool relu, const at::Tensor& residual) {
  TORCH_CHECK(NhwcBatchNormSupports(input), "NhwcBatchNorm: unsupported input");
  TORCH_CHECK(!residual.defined() || (relu && LaidOutLike(residual, input)),
              "NhwcBatchNorm: the residual must be like the input, and comes with the ReLU");
  Epilogue epilogue;
  epilogue.relu = relu;
  epilogue.residual = residual;
  return RunForward(input, weight, bias, running_mean, running_var, momentum, eps, epilogue,
                    input.sizes());
}

NhwcBatchNormForwardResult NhwcBatchNormReluMaxPoolForward(
    const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps,
    const MaxPoolGeometry& pool) {
  TORCH_CHECK(NhwcBatchNormReluMaxPoolSupports(input, pool),
              "NhwcBatchNormReluMaxPool: unsupported input or pooling");
  const std::vector<int64_t> pooled_sizes = MaxPoolOutputSizes(input.sizes(), pool);
  Epilogue epilogue;
  epilogue.relu = true;
  epilogue.pool = &pool;
  epilogue.picks = at::empty(
      pooled_sizes, input.options().dtype(at::kByte).memory_format(at::MemoryFormat::ChannelsLast));
  return RunForward(input, weight, bias, running_mean, running_var, momentum, eps, epilogue,
                    pooled_sizes);
}

NhwcBatchNormBackwardResult NhwcBatchNormBackward(const at::Tensor& grad_output,
                                                  const at::Tensor& input, const at::Tensor& weight,
                                                  const at::Tensor& mean, const at::Tensor& invstd,
                                                  const at::Tensor& scale, const at::Tensor& shift,
                                                  bool relu, const at::Tensor& output,
                                                  const at::Tensor& twin_grad) {
  TORCH_CHECK(NhwcBatchNormSupports(input) && LaidOutLike(grad_output, input) &&
                  (!twin_grad.defined() || LaidOutLike(twin_grad, input)),
              "NhwcBatchNorm: unsupported gradient");
  TORCH_CHECK(!twin_grad.defined() || output.defined(),
              "NhwcBatchNorm: a twin's gradient comes with a residual's add");
  TORCH_CHECK(!output.defined() || (relu && LaidOutLike(output, input)),
              "NhwcBatchNorm: the output must be like the input, and comes with the ReLU");
  Epilogue epilogue;
  epilogue.relu = relu;
  epilogue.output = output;
  epilogue.twin_grad = twin_grad;
  return RunBackward(grad_output, input, weight, mean, invstd, scale, shift, epilogue);
}

NhwcBatchNormBackwardResult NhwcBatchNormReluMaxPoolBackward(
    const at::Tensor& grad_output, const at::Tensor& picks, const at::Tensor& input,
    const at::Tensor& weight, const at::Tensor& mean, const at::Tensor& invstd,
    const at::Tensor& scale, const at::Tensor& shift, const MaxPoolGeometry& pool,
    const at::Tensor& twin_grad) {
  TORCH_CHECK(NhwcBatchNormReluMaxPoolSupports(input, pool),
              "NhwcBatchNormReluMaxPool: unsupported input or pooling");
  const at::Tensor grad = vec8::ChannelsLastAligned(grad_output);
  const at::Tensor twin = twin_grad.defined() ? vec8::ChannelsLastAligned(twin_grad) : twin_grad;
  TORCH_CHECK(LaidOutLikePooled(grad, input, pool, input.scalar_type()) &&
                  (!twin.defined() || LaidOutLikePooled(twin, input, pool, input.scalar_type())) &&
                  LaidOutLikePooled(picks, input, pool, at::kByte),
              "NhwcBatchNormReluMaxPool: the gradients and the picks must be like the pooled "
              "output");
  Epilogue epilogue;
  epilogue.relu = true;
  epilogue.pool = &pool;
  epilogue.picks = picks;
  epilogue.twin_grad = twin;
  return RunBackward(grad, input, weight, mean, invstd, scale, shift, epilogue);
}

}  // namespace traind
