// Eight consecutive channels of an NHWC activation as one thread's unit of work, for traind's
// CUDA kernels (models/cuda/*.cu only), and the host-side alignment the accesses need. bf16 data
// is one 16-byte access, fp32 two; the values are worked on in fp32 registers either way.
#ifndef TRAIND_MODELS_CUDA_VEC8_CUH_
#define TRAIND_MODELS_CUDA_VEC8_CUH_

#include <ATen/core/Tensor.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

namespace traind {
namespace vec8 {

constexpr int kVec = 8;

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

// v as a T would hold it: rounded to bf16 for bf16 data, unchanged for fp32.
template <typename T>
__device__ __forceinline__ void RoundTo(float (&v)[kVec]) {
  if constexpr (!std::is_same_v<T, float>) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) v[k] = __bfloat162float(__float2bfloat16_rn(v[k]));
  }
}

// max(v, 0) that keeps a NaN, as torch.relu does (fmaxf would turn it into 0 and hide a diverged
// activation from the loss).
__device__ __forceinline__ float Relu(float v) { return v < 0.f ? 0.f : v; }

// Host side: whether a tensor's data starts on the 16-byte boundary the vector accesses need.
inline bool Aligned(const at::Tensor& t) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// `t` in channels_last on a 16-byte boundary: itself where it already is, else a copy (a fresh
// allocation is aligned). For gradients, which autograd may hand over in any layout.
inline at::Tensor ChannelsLastAligned(const at::Tensor& t) {
  at::Tensor laid_out = t.contiguous(at::MemoryFormat::ChannelsLast);
  return Aligned(laid_out) ? laid_out : laid_out.clone(at::MemoryFormat::ChannelsLast);
}

}  // namespace vec8
}  // namespace traind

#endif  // TRAIND_MODELS_CUDA_VEC8_CUH_
