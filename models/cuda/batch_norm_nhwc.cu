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

namespace traind {
namespace {

// The input is a [rows = N*H*W, C] matrix. Every kernel gives each thread one group of kVec
// channels (one 16-byte load) and a strided set of rows: threadIdx.x / blockIdx.x pick the
// group, threadIdx.y / blockIdx.y the rows. A warp then reads whole consecutive rows, and each
// thread keeps its channels' statistics or coefficients in registers.
constexpr int kVec = 8;
constexpr int kThreads = 256;

struct alignas(16) Bf16x8 {
  __nv_bfloat162 pair[kVec / 2];
};

__device__ __forceinline__ void Load(const __nv_bfloat16* p, float (&v)[kVec]) {
  const Bf16x8 packed = *reinterpret_cast<const Bf16x8*>(p);
#pragma unroll
  for (int i = 0; i < kVec / 2; ++i) {
    const float2 f = __bfloat1622float2(packed.pair[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ void Store(__nv_bfloat16* p, const float (&v)[kVec]) {
  Bf16x8 packed;
#pragma unroll
  for (int i = 0; i < kVec / 2; ++i) packed.pair[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<Bf16x8*>(p) = packed;
}

// fp32 activations: the same eight channels a thread, as two 16-byte accesses.
__device__ __forceinline__ void Load(const float* p, float (&v)[kVec]) {
#pragma unroll
  for (int i = 0; i < kVec / 4; ++i) {
    const float4 f = reinterpret_cast<const float4*>(p)[i];
    v[4 * i] = f.x;
    v[4 * i + 1] = f.y;
    v[4 * i + 2] = f.z;
    v[4 * i + 3] = f.w;
  }
}

__device__ __forceinline__ void Store(float* p, const float (&v)[kVec]) {
#pragma unroll
  for (int i = 0; i < kVec / 4; ++i) {
    reinterpret_cast<float4*>(p)[i] =
        make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  }
}

// max(v, 0) that keeps a NaN, as torch.relu does (fmaxf would turn it into 0 and hide a diverged
// activation from the loss).
__device__ __forceinline__ float Relu(float v) { return v < 0.f ? 0.f : v; }

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

// Calls visit(offset) with the offset of this thread's channel group in each of its rows.
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

// Loads dy into g and x into v at `offset`; with kRelu, g is then the gradient reaching the
// batch norm: dy where the forward's ReLU passed (recomputed from x), else 0.
template <bool kRelu, typename T>
__device__ __forceinline__ void LoadGradient(const T* dy, const T* x, int64_t offset,
                                             const float (&scale)[kVec], const float (&shift)[kVec],
                                             float (&g)[kVec], float (&v)[kVec]) {
  Load(dy + offset, g);
  Load(x + offset, v);
  if (!kRelu) return;
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
template <typename T, Mask kMask>
__global__ void __launch_bounds__(kThreads)
    GradientSumPartials(const T* __restrict__ dy, const T* __restrict__ x,
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
    ForEachRow(layout, group, [&](int64_t offset) {
      float g[kVec], v[kVec];
      LoadGradient<kRecompute>(dy, x, offset, a, b, g, v);
      if (kMask == Mask::kFromOutput) {
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

template <typename T, bool kRelu>
__global__ void __launch_bounds__(kThreads)
    InputGradient(const T* __restrict__ dy, const T* __restrict__ x, T* __restrict__ dx,
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
  ForEachRow(layout, group, [&](int64_t offset) {
    float g[kVec], v[kVec];
    LoadGradient<kRelu>(dy, x, offset, forward_scale, forward_shift, g, v);
#pragma unroll
    for (int k = 0; k < kVec; ++k) v[k] = a[k] * g[k] + b[k] * (v[k] - mu[k]) + c[k];
    Store(dx + offset, v);
  });
}

// Blocks of 256 threads: up to 32 channel groups wide, the rest rows; enough blocks for about
// eight per multiprocessor, each thread then looping over its share of the rows.
struct LaunchShape {
  dim3 grid, block;
};

LaunchShape PlanLaunch(const Layout& layout, int device) {
  const int width = std::min(layout.groups, 32);
  int height = 1;
  while (height * 2 * width <= kThreads) height *= 2;
  // ATen caches the device properties: no driver call per launch.
  const int multiprocessors = at::cuda::getDeviceProperties(device)->multiProcessorCount;
  const int columns = (layout.groups + width - 1) / width;
  const int64_t wanted = std::max<int64_t>(1, int64_t{multiprocessors} * 8 / columns);
  const int64_t needed = (layout.rows + height - 1) / height;
  const int row_blocks = static_cast<int>(std::min<int64_t>({wanted, needed, 65535}));
  return {dim3(columns, row_blocks), dim3(width, height)};
}

Layout LayoutOf(const at::Tensor& input) {
  const int channels = static_cast<int>(input.size(1));
  return {input.numel() / channels, channels, channels / kVec};
}

// What the forward and the backward pass both set up: the layout, the input's device and its
// current stream, the launch shape, and `arrays` per-row-block partial results of [row blocks, C]
// fp32 that the finalising kernel merges.
struct Pass {
  Pass(const at::Tensor& input, int arrays)
      : layout(LayoutOf(input)),
        guard(input.device()),
        stream(c10::cuda::getCurrentCUDAStream()),
        shape(PlanLaunch(layout, input.get_device())),
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

// The activations' data as the kernels' element type (bf16 or fp32).
template <typename T>
const T* Data(const at::Tensor& t) {
  return reinterpret_cast<const T*>(t.data_ptr());
}
template <typename T>
T* MutableData(at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

void CheckParameter(const at::Tensor& t, int channels, const char* name) {
  TORCH_CHECK(
      t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous() && t.numel() == channels,
      "NhwcBatchNorm: ", name, " must be a contiguous CUDA float tensor of ", channels,
      " elements");
}

// The forward pass for activations of type T: statistics, then scale, shift and the ReLU.
template <typename T>
void LaunchForward(Pass& pass, const at::Tensor& input, const at::Tensor& weight,
                   const at::Tensor& bias, at::Tensor& running_mean, at::Tensor& running_var,
                   double momentum, double eps, bool relu, const at::Tensor& residual,
                   float* channel, at::Tensor& output) {
  const Layout& layout = pass.layout;
  WelfordPartials<T>
      <<<pass.shape.grid, pass.shape.block, pass.shared_bytes(1 + 2 * kVec), pass.stream>>>(
          Data<T>(input), layout, pass.partial(0), pass.partial(1), pass.partial(2));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  FinalizeStatistics<<<layout.channels, kThreads, 0, pass.stream>>>(
      pass.partial(0), pass.partial(1), pass.partial(2), pass.row_blocks(), layout.channels,
      weight.data_ptr<float>(), bias.data_ptr<float>(), running_mean.data_ptr<float>(),
      running_var.data_ptr<float>(), static_cast<float>(momentum), static_cast<float>(eps), channel,
      channel + layout.channels, channel + 2 * layout.channels, channel + 3 * layout.channels);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const bool add = residual.defined();
  const auto scale_shift = add    ? ScaleShift<T, true, true>
                           : relu ? ScaleShift<T, true, false>
                                  : ScaleShift<T, false, false>;
  scale_shift<<<pass.shape.grid, pass.shape.block, 0, pass.stream>>>(
      Data<T>(input), add ? Data<T>(residual) : nullptr, MutableData<T>(output), layout,
      channel + 2 * layout.channels, channel + 3 * layout.channels);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The backward pass for activations of type T: the two sums, then the input gradient. With the
// forward's `output` (a residual was added), the sums pass writes the masked gradient into
// `grad_residual` and the input gradient reads it as its dy, with no mask of its own.
template <typename T>
void LaunchBackward(Pass& pass, const at::Tensor& grad_output, const at::Tensor& input,
                    const at::Tensor& weight, const at::Tensor& mean, const at::Tensor& invstd,
                    const at::Tensor& scale, const at::Tensor& shift, bool relu,
                    const at::Tensor& output, at::Tensor& parameter_grads, at::Tensor& coefficients,
                    at::Tensor& grad_input, at::Tensor& grad_residual) {
  const Layout& layout = pass.layout;
  const bool add = output.defined();
  const auto sums = add    ? GradientSumPartials<T, Mask::kFromOutput>
                    : relu ? GradientSumPartials<T, Mask::kRecomputed>
                           : GradientSumPartials<T, Mask::kNone>;
  sums<<<pass.shape.grid, pass.shape.block, pass.shared_bytes(2 * kVec), pass.stream>>>(
      Data<T>(grad_output), Data<T>(input), add ? Data<T>(output) : nullptr,
      add ? MutableData<T>(grad_residual) : nullptr, layout, mean.data_ptr<float>(),
      scale.data_ptr<float>(), shift.data_ptr<float>(), pass.partial(0), pass.partial(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  FinalizeGradients<<<layout.channels, kThreads, 0, pass.stream>>>(
      pass.partial(0), pass.partial(1), pass.row_blocks(), layout.channels,
      static_cast<float>(layout.rows), weight.data_ptr<float>(), invstd.data_ptr<float>(),
      parameter_grads[0].data_ptr<float>(), parameter_grads[1].data_ptr<float>(),
      coefficients.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const auto input_gradient = relu && !add ? InputGradient<T, true> : InputGradient<T, false>;
  input_gradient<<<pass.shape.grid, pass.shape.block, 0, pass.stream>>>(
      Data<T>(add ? grad_residual : grad_output), Data<T>(input), MutableData<T>(grad_input),
      layout, mean.data_ptr<float>(), scale.data_ptr<float>(), shift.data_ptr<float>(),
      coefficients.data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool NhwcBatchNormSupports(const at::Tensor& input) {
  return input.is_cuda() &&
         (input.scalar_type() == at::kBFloat16 || input.scalar_type() == at::kFloat) &&
         input.dim() == 4 && input.size(1) % kVec == 0 && input.size(1) > 0 &&
         input.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0 &&
         input.numel() / input.size(1) > 1;
}

namespace {
// Whether `t` can be read at the input's offsets: the kernels take it, on the input's device,
// with its sizes and type.
bool LaidOutLike(const at::Tensor& t, const at::Tensor& input) {
  return NhwcBatchNormSupports(t) && t.device() == input.device() && t.sizes() == input.sizes() &&
         t.scalar_type() == input.scalar_type();
}
}  // namespace

NhwcBatchNormForwardResult NhwcBatchNormForward(const at::Tensor& input, const at::Tensor& weight,
                                                const at::Tensor& bias, at::Tensor& running_mean,
                                                at::Tensor& running_var, double momentum,
                                                double eps, bool relu, const at::Tensor& residual) {
  TORCH_CHECK(NhwcBatchNormSupports(input), "NhwcBatchNorm: unsupported input");
  TORCH_CHECK(!residual.defined() || (relu && LaidOutLike(residual, input)),
              "NhwcBatchNorm: the residual must be like the input, and comes with the ReLU");
  Pass pass(input, /*arrays=*/3);  // Welford count, mean and m2 per row block and channel
  const Layout& layout = pass.layout;
  CheckParameter(weight, layout.channels, "weight");
  CheckParameter(bias, layout.channels, "bias");
  CheckParameter(running_mean, layout.channels, "running_mean");
  CheckParameter(running_var, layout.channels, "running_var");
  // Per channel: mean, invstd, scale, shift.
  at::Tensor per_channel = at::empty({4, layout.channels}, input.options().dtype(at::kFloat));
  at::Tensor output = at::empty_like(input, at::MemoryFormat::ChannelsLast);
  const auto forward =
      input.scalar_type() == at::kFloat ? LaunchForward<float> : LaunchForward<__nv_bfloat16>;
  forward(pass, input, weight, bias, running_mean, running_var, momentum, eps, relu, residual,
          per_channel.data_ptr<float>(), output);
  return {output, per_channel[0], per_channel[1], per_channel[2], per_channel[3]};
}

NhwcBatchNormBackwardResult NhwcBatchNormBackward(const at::Tensor& grad_output,
                                                  const at::Tensor& input, const at::Tensor& weight,
                                                  const at::Tensor& mean, const at::Tensor& invstd,
                                                  const at::Tensor& scale, const at::Tensor& shift,
                                                  bool relu, const at::Tensor& output) {
  TORCH_CHECK(NhwcBatchNormSupports(input) && LaidOutLike(grad_output, input),
              "NhwcBatchNorm: unsupported gradient");
  TORCH_CHECK(!output.defined() || (relu && LaidOutLike(output, input)),
              "NhwcBatchNorm: the output must be like the input, and comes with the ReLU");
  Pass pass(input, /*arrays=*/2);  // sum(dy) and sum(dy * (x - mean)) per row block and channel
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
  at::Tensor grad_residual;
  if (output.defined()) grad_residual = at::empty_like(input, at::MemoryFormat::ChannelsLast);
  const auto backward =
      input.scalar_type() == at::kFloat ? LaunchBackward<float> : LaunchBackward<__nv_bfloat16>;
  backward(pass, grad_output, input, weight, mean, invstd, scale, shift, relu, output,
           parameter_grads, coefficients, grad_input, grad_residual);
  return {grad_input, parameter_grads[0], parameter_grads[1], grad_residual};
}

}  // namespace traind
