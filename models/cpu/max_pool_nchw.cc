#include "models/cpu/max_pool_nchw.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <cmath>

namespace traind {

namespace {

// Planes per parallel task: LeNet5's first pooling has 784-element planes, so 16 of them are
// ~50 KiB, enough to amortize a task.
constexpr int64_t kPlanesPerTask = 16;

// One H x W plane; kKernel > 0 fixes the window at compile time (2: the common case), 0 reads
// `kernel`. ATen's rule: take a value if it is greater than the maximum so far or is NaN.
template <int kKernel>
void PoolPlane(const float* in, int64_t height, int64_t width, int64_t kernel, float* out,
               int64_t* indices) {
  const int64_t k = kKernel > 0 ? kKernel : kernel;
  const int64_t out_height = height / k, out_width = width / k;
  for (int64_t oy = 0; oy < out_height; ++oy) {
    for (int64_t ox = 0; ox < out_width; ++ox) {
      const int64_t first = oy * k * width + ox * k;
      float best = in[first];
      int64_t best_index = first;
      for (int64_t dy = 0; dy < k; ++dy) {
        for (int64_t dx = 0; dx < k; ++dx) {
          const int64_t index = first + dy * width + dx;
          const float value = in[index];
          if (value > best || std::isnan(value)) {
            best = value;
            best_index = index;
          }
        }
      }
      out[oy * out_width + ox] = best;
      indices[oy * out_width + ox] = best_index;
    }
  }
}

}  // namespace

bool MaxPoolNchwSupports(const at::Tensor& input, int64_t kernel, int64_t stride, int64_t padding) {
  return input.device().is_cpu() && input.scalar_type() == at::kFloat && input.dim() == 4 &&
         input.is_contiguous() && kernel >= 1 && stride == kernel && padding == 0 &&
         input.size(2) >= kernel && input.size(3) >= kernel;
}

std::pair<at::Tensor, at::Tensor> MaxPoolNchwForward(const at::Tensor& input, int64_t kernel) {
  const int64_t planes = input.size(0) * input.size(1);
  const int64_t height = input.size(2), width = input.size(3);
  const int64_t out_height = height / kernel, out_width = width / kernel;
  at::Tensor output =
      at::empty({input.size(0), input.size(1), out_height, out_width}, input.options());
  at::Tensor indices = at::empty(output.sizes(), input.options().dtype(at::kLong));
  const float* in = input.data_ptr<float>();
  float* out = output.data_ptr<float>();
  int64_t* index = indices.data_ptr<int64_t>();
  at::parallel_for(0, planes, kPlanesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* plane = in + p * height * width;
      float* out_plane = out + p * out_height * out_width;
      int64_t* index_plane = index + p * out_height * out_width;
      if (kernel == 2) {
        PoolPlane<2>(plane, height, width, kernel, out_plane, index_plane);
      } else {
        PoolPlane<0>(plane, height, width, kernel, out_plane, index_plane);
      }
    }
  });
  return {output, indices};
}

at::Tensor MaxPoolNchwBackward(const at::Tensor& grad_output, const at::Tensor& indices,
                               int64_t height, int64_t width) {
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor where = indices.contiguous();
  at::Tensor grad_input = at::zeros({grad.size(0), grad.size(1), height, width}, grad.options());
  const int64_t planes = grad.size(0) * grad.size(1);
  const int64_t plane_outputs = grad.size(2) * grad.size(3);
  const float* from = grad.data_ptr<float>();
  const int64_t* index = where.data_ptr<int64_t>();
  float* to = grad_input.data_ptr<float>();
  at::parallel_for(0, planes, kPlanesPerTask, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float* plane = to + p * height * width;
      for (int64_t q = p * plane_outputs; q < (p + 1) * plane_outputs; ++q) {
        plane[index[q]] = from[q];
      }
    }
  });
  return grad_input;
}

}  // namespace traind
