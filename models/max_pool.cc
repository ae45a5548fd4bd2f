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

// traind's NHWC forward and backward (models/cuda/max_pool_nhwc.h); only the one-byte picks are
// kept for the backward, not the input or int64 indices.
class NhwcMaxPoolFunction : public torch::autograd::Function<NhwcMaxPoolFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input, int64_t kernel,
                               int64_t stride, int64_t padding) {
    auto [output, picks] = MaxPoolNhwcForward(input, MaxPoolGeometry{kernel, stride, padding});
    context->save_for_backward({picks});
    context->saved_data["sizes"] = input.sizes();
    context->saved_data["kernel"] = kernel;
    context->saved_data["stride"] = stride;
    context->saved_data["padding"] = padding;
    return output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const MaxPoolGeometry geometry{context->saved_data["kernel"].toInt(),
                                   context->saved_data["stride"].toInt(),
                                   context->saved_data["padding"].toInt()};
    const torch::Tensor grad_input =
        MaxPoolNhwcBackward(grad_outputs[0], context->get_saved_variables()[0],
                            context->saved_data["sizes"].toIntVector(), geometry);
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
  if (OwnCudaKernelsEnabled() &&
      MaxPoolNhwcSupports(input, MaxPoolGeometry{kernel_, stride_, padding_})) {
    if (torch::GradMode::is_enabled() && input.requires_grad()) {
      return NhwcMaxPoolFunction::apply(input, kernel_, stride_, padding_);
    }
    return MaxPoolNhwcForward(input, MaxPoolGeometry{kernel_, stride_, padding_}).first;
  }
#endif
  return torch::max_pool2d(input, {kernel_, kernel_}, {stride_, stride_}, {padding_, padding_});
}

}  // namespace traind
