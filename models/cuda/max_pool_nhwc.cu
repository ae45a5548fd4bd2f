#include "models/cuda/max_pool_nhwc.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

#include "models/cuda/max_pool_window.cuh"

namespace traind {
namespace {

using pool_window::kThreads;
using pool_window::kVec;
using pool_window::Picks;
using pool_window::PoolShape;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    MaxPoolBackward(const T* __restrict__ dy, const Picks* __restrict__ picks, T* __restrict__ dx,
                    PoolShape s, int64_t work) {
  const int groups = s.channels / kVec;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < work;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum[kVec];
    pool_window::GatherPicked(dy, picks, s, pool_window::SlotOf(i, groups, s.width, s.height), sum);
    vec8::Store(dx + i * kVec, sum);
  }
}

}  // namespace

namespace pool_window {
int Blocks(int64_t work, int device) {
  int multiprocessors = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  return static_cast<int>(
      std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t{multiprocessors} * 16));
}
}  // namespace pool_window

std::vector<int64_t> MaxPoolOutputSizes(at::IntArrayRef input_sizes,
                                        const MaxPoolGeometry& geometry) {
  const auto out_size = [&](int64_t size) {
    return (size + 2 * geometry.padding - geometry.kernel) / geometry.stride + 1;
  };
  return {input_sizes[0], input_sizes[1], out_size(input_sizes[2]), out_size(input_sizes[3])};
}

bool MaxPoolNhwcSupports(const at::Tensor& input, const MaxPoolGeometry& geometry) {
  return input.is_cuda() && input.dim() == 4 &&
         (input.scalar_type() == at::kFloat || input.scalar_type() == at::kBFloat16) &&
         input.size(1) % kVec == 0 && input.size(1) > 0 &&
         input.is_contiguous(at::MemoryFormat::ChannelsLast) && vec8::Aligned(input) &&
         geometry.kernel >= 1 && geometry.kernel <= 15 && geometry.stride >= 1 &&
         geometry.padding >= 0 && 2 * geometry.padding <= geometry.kernel &&
         input.size(2) + 2 * geometry.padding >= geometry.kernel &&
         input.size(3) + 2 * geometry.padding >= geometry.kernel;
}

std::pair<at::Tensor, at::Tensor> MaxPoolNhwcForward(const at::Tensor& input,
                                                     const MaxPoolGeometry& geometry) {
  TORCH_CHECK(MaxPoolNhwcSupports(input, geometry), "MaxPoolNhwcForward: unsupported input");
  const auto layout = at::MemoryFormat::ChannelsLast;
  const std::vector<int64_t> sizes = MaxPoolOutputSizes(input.sizes(), geometry);
  at::Tensor output = at::empty(sizes, input.options().memory_format(layout));
  at::Tensor picks = at::empty(sizes, input.options().dtype(at::kByte).memory_format(layout));
  const int64_t work = output.numel() / kVec;
  if (work == 0) return {output, picks};
  const c10::cuda::CUDAGuard guard(input.device());
  const PoolShape shape = pool_window::PoolShapeOf(input.sizes(), output.sizes(), geometry);
  const int blocks = pool_window::Blocks(work, input.get_device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  auto* picked = reinterpret_cast<Picks*>(picks.data_ptr());
  if (input.scalar_type() == at::kFloat) {
    pool_window::MaxPoolForwardKernel<<<blocks, kThreads, 0, stream>>>(
        input.data_ptr<float>(), output.data_ptr<float>(), picked, shape, work,
        pool_window::AsStored{});
  } else {
    pool_window::MaxPoolForwardKernel<<<blocks, kThreads, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(input.data_ptr()),
        reinterpret_cast<__nv_bfloat16*>(output.data_ptr()), picked, shape, work,
        pool_window::AsStored{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {output, picks};
}

at::Tensor MaxPoolNhwcBackward(const at::Tensor& grad_output, const at::Tensor& picks,
                               at::IntArrayRef input_sizes, const MaxPoolGeometry& geometry) {
  const auto layout = at::MemoryFormat::ChannelsLast;
  const at::Tensor dy = vec8::ChannelsLastAligned(grad_output);
  TORCH_CHECK(input_sizes.size() == 4 && input_sizes[1] == dy.size(1) &&
                  MaxPoolNhwcSupports(dy, MaxPoolGeometry{1, 1, 0}) &&
                  picks.scalar_type() == at::kByte && picks.sizes() == dy.sizes() &&
                  picks.is_contiguous(layout) && picks.device() == dy.device(),
              "MaxPoolNhwcBackward: unsupported gradient");
  at::Tensor dx = at::empty(input_sizes, dy.options().memory_format(layout));
  const int64_t work = dx.numel() / kVec;
  if (work == 0) return dx;
  const c10::cuda::CUDAGuard guard(dy.device());
  const PoolShape shape = pool_window::PoolShapeOf(input_sizes, dy.sizes(), geometry);
  const int blocks = pool_window::Blocks(work, dy.get_device());
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
