#include "engine/cuda/master_weight_adam.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

namespace traind {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;  // elements per vector access: 16 bytes of fp32, 8 of bf16

struct alignas(8) Bf16x4 {
  __nv_bfloat162 lo, hi;
};

struct Hyper {
  float beta1, beta2, eps, weight_decay;
  bool decoupled;
};

struct StepScalars {
  float lr, step_size, bias_correction2_sqrt, clip_factor;
};

// The fused Adam arithmetic, in fp32: the moments as fma(beta, m, (1 - beta) g) written the way
// ATen's kernel writes them, so the same gradient gives the same update.
__device__ __forceinline__ void Update(float& param, float grad, float& exp_avg, float& exp_avg_sq,
                                       const Hyper& h, const StepScalars& s) {
  grad *= s.clip_factor;
  if (h.weight_decay != 0.0f) {
    if (h.decoupled) {
      param -= s.lr * h.weight_decay * param;
    } else {
      grad += param * h.weight_decay;
    }
  }
  exp_avg = fmaf(h.beta1, exp_avg, fmaf(-h.beta1, grad, grad));
  const float grad2 = grad * grad;
  exp_avg_sq = fmaf(h.beta2, exp_avg_sq, fmaf(-h.beta2, grad2, grad2));
  const float denom = sqrtf(exp_avg_sq) / s.bias_correction2_sqrt + h.eps;
  param -= s.step_size * exp_avg / denom;
}

__global__ void MasterWeightAdamKernel(float* __restrict__ master,
                                       const __nv_bfloat16* __restrict__ grad,
                                       float* __restrict__ exp_avg, float* __restrict__ exp_avg_sq,
                                       __nv_bfloat16* __restrict__ copy, int64_t n,
                                       int64_t vector_groups, const float* __restrict__ step,
                                       const float* __restrict__ learning_rate,
                                       const float* __restrict__ clip_factor, Hyper h) {
  StepScalars s;
  s.lr = *learning_rate;
  const float count = *step;
  s.step_size = s.lr / (1.0f - powf(h.beta1, count));
  s.bias_correction2_sqrt = sqrtf(1.0f - powf(h.beta2, count));
  s.clip_factor = clip_factor != nullptr ? *clip_factor : 1.0f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t g = first; g < vector_groups; g += stride) {
    float4 p = reinterpret_cast<float4*>(master)[g];
    float4 m = reinterpret_cast<float4*>(exp_avg)[g];
    float4 v = reinterpret_cast<float4*>(exp_avg_sq)[g];
    const Bf16x4 gr = reinterpret_cast<const Bf16x4*>(grad)[g];
    const float2 g01 = __bfloat1622float2(gr.lo);
    const float2 g23 = __bfloat1622float2(gr.hi);
    Update(p.x, g01.x, m.x, v.x, h, s);
    Update(p.y, g01.y, m.y, v.y, h, s);
    Update(p.z, g23.x, m.z, v.z, h, s);
    Update(p.w, g23.y, m.w, v.w, h, s);
    reinterpret_cast<float4*>(master)[g] = p;
    reinterpret_cast<float4*>(exp_avg)[g] = m;
    reinterpret_cast<float4*>(exp_avg_sq)[g] = v;
    Bf16x4 out;
    out.lo = __floats2bfloat162_rn(p.x, p.y);
    out.hi = __floats2bfloat162_rn(p.z, p.w);
    reinterpret_cast<Bf16x4*>(copy)[g] = out;
  }
  // What the vector loop did not cover: a tail, or everything when the data is not aligned.
  for (int64_t i = vector_groups * kVec + first; i < n; i += stride) {
    float p = master[i], m = exp_avg[i], v = exp_avg_sq[i];
    Update(p, __bfloat162float(grad[i]), m, v, h, s);
    master[i] = p;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    copy[i] = __float2bfloat16_rn(p);
  }
}

bool Aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The same element order in memory: equal strides wherever a dimension has more than one
// element (autograd leaves a gradient's strides of size-1 dimensions free).
bool SameLayout(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

bool IsScalar(const at::Tensor& t) {
  return t.defined() && t.is_cuda() && t.scalar_type() == at::kFloat && t.numel() == 1;
}

}  // namespace

bool MasterWeightAdamSupports(const at::Tensor& master, const at::Tensor& grad,
                              const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                              const at::Tensor& copy) {
  for (const at::Tensor* t : {&master, &grad, &exp_avg, &exp_avg_sq, &copy}) {
    if (!t->defined() || !t->is_cuda() || t->device() != master.device() ||
        !t->is_non_overlapping_and_dense() || !SameLayout(*t, master)) {
      return false;
    }
  }
  return master.scalar_type() == at::kFloat && exp_avg.scalar_type() == at::kFloat &&
         exp_avg_sq.scalar_type() == at::kFloat && grad.scalar_type() == at::kBFloat16 &&
         copy.scalar_type() == at::kBFloat16;
}

void MasterWeightAdamStep(const at::Tensor& master, const at::Tensor& grad,
                          const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                          const at::Tensor& copy, const at::Tensor& step,
                          const at::Tensor& learning_rate, const at::Tensor& clip_factor,
                          const AdamHyperparameters& hyper) {
  TORCH_CHECK(MasterWeightAdamSupports(master, grad, exp_avg, exp_avg_sq, copy),
              "MasterWeightAdamStep: fp32 master and moments, bf16 gradient and copy, one layout");
  TORCH_CHECK(IsScalar(step) && IsScalar(learning_rate) &&
                  (!clip_factor.defined() || IsScalar(clip_factor)),
              "MasterWeightAdamStep: step, learning rate and gradient scale are [] fp32 on CUDA");
  const int64_t n = master.numel();
  if (n == 0) return;
  const c10::cuda::CUDAGuard guard(master.device());
  // Dense tensors of one layout: element i of each is at the same offset of its storage, so
  // the kernel walks them as flat arrays whatever the strides.
  float* p = master.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  const auto* g = reinterpret_cast<const __nv_bfloat16*>(grad.data_ptr<at::BFloat16>());
  auto* c = reinterpret_cast<__nv_bfloat16*>(copy.data_ptr<at::BFloat16>());
  const bool vector = Aligned(p, 16) && Aligned(m, 16) && Aligned(v, 16) &&
                      Aligned(g, sizeof(Bf16x4)) && Aligned(c, sizeof(Bf16x4));
  const int64_t groups = vector ? n / kVec : 0;
  const int64_t work = std::max<int64_t>(groups, n - groups * kVec);
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int blocks =
      static_cast<int>(std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t{sms} * 8));
  const Hyper h{static_cast<float>(hyper.beta1), static_cast<float>(hyper.beta2),
                static_cast<float>(hyper.eps), static_cast<float>(hyper.weight_decay),
                hyper.decoupled};
  MasterWeightAdamKernel<<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      p, g, m, v, c, n, groups, step.data_ptr<float>(), learning_rate.data_ptr<float>(),
      clip_factor.defined() ? clip_factor.data_ptr<float>() : nullptr, h);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace traind
