#include "models/max_pool.h"

#include <cstdint>

#include "models/cpu/max_pool_nchw.h"
#include "models/own_kernels.h"
#ifdef TRAIND_HAVE_CUDA_KERNELS
#include "models/cuda/max_pool_nhwc.h"
#endif

namespace traind {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// traind's NCHW CPU forward and backward (models/cpu/max_pool_nchw.h); only the indices are kept
// for the backward, not the input.
class NchwMaxPoolFunction : public torch::autograd::Function<NchwMaxPoolFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               int64_t kernel) {
    auto [output, indices] = MaxPoolNchwForward(input, kernel);
    context->save_for_backward({indices});
    context->saved_data["height"] = input.size(2);
    context->saved_data["width"] = input.size(3);
    return output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const torch::Tensor grad_input = MaxPoolNchwBackward(
        grad_outputs[0], context->get_saved_variables()[0], context->saved_data["height"].toInt(),
        context->saved_data["width"].toInt());
    return {grad_input, torch::Tensor()};
  }
};

}  // namespace

#ifdef TRAIND_HAVE_CUDA_KERNELS
namespace {

bool Aligned(const torch::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

class NhwcMaxPoolFunction : public torch::autograd::Function<NhwcMaxPoolFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input, int64_t kernel,
                               int64_t stride, int64_t padding) {
    auto [output, indices] = torch::max_pool2d_with_indices(input, {kernel, kernel},
                                                            {stride, stride}, {padding, padding});
    // Like ATen's own backward, which is the fallback below, keep the input.
    context->save_for_backward({input, indices});
    context->saved_data["kernel"] = kernel;
    context->saved_data["stride"] = stride;
    context->saved_data["padding"] = padding;
    return output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const variable_list saved = context->get_saved_variables();
    const MaxPoolGeometry geometry{context->saved_data["kernel"].toInt(),
                                   context->saved_data["stride"].toInt(),
                                   context->saved_data["padding"].toInt()};
    const torch::Tensor grad = grad_outputs[0].contiguous(torch::MemoryFormat::ChannelsLast);
    const torch::Tensor indices = saved[1].contiguous(torch::MemoryFormat::ChannelsLast);
    torch::Tensor grad_input;
    if (MaxPoolNhwcSupports(grad) && Aligned(grad) && Aligned(indices)) {
      grad_input = MaxPoolNhwcBackward(grad, indices, saved[0].sizes(), geometry);
    } else {
      grad_input = torch::max_pool2d_with_indices_backward(
          grad, saved[0], {geometry.kernel, geometry.kernel}, {geometry.stride, geometry.stride},
          {geometry.padding, geometry.padding}, {1, 1}, /*ceil_mode=*/false, saved[1]);
    }
    return {grad_input, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace
#endif  // TRAIND_HAVE_CUDA_KERNELS

void MaxPool2dImpl::pretty_print(std::ostream& stream) const {
  stream << "traind::MaxPool2d(kernel=" << kernel_ << ", stride=" << stride_
         << ", padding=" << padding_ << ")";
}

torch::Tensor MaxPool2dImpl::forward(const torch::Tensor& input) {
  if (OwnCpuKernelsEnabled() && MaxPoolNchwSupports(input, kernel_, stride_, padding_)) {
    if (torch::GradMode::is_enabled() && input.requires_grad()) {
      return NchwMaxPoolFunction::apply(input, kernel_);
    }
    return MaxPoolNchwForward(input, kernel_).first;
  }
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (torch::GradMode::is_enabled() && input.requires_grad() && OwnCudaKernelsEnabled() &&
      MaxPoolNhwcSupports(input)) {
    return NhwcMaxPoolFunction::apply(input, kernel_, stride_, padding_);
  }
#endif
  return torch::max_pool2d(input, {kernel_, kernel_}, {stride_, stride_}, {padding_, padding_});
}

}  // namespace traind
