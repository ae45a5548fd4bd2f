#include "models/max_pool_tanh.h"

#include "models/own_kernels.h"
#ifdef TRAIND_HAVE_CUDA_KERNELS
#include "models/cuda/max_pool_tanh_nchw.h"
#endif

namespace traind {

#ifdef TRAIND_HAVE_CUDA_KERNELS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The backward keeps the output (tanh's gradient needs it, as ATen's Tanh keeps it) and the
// one-byte picks, not the input or int64 indices.
class MaxPoolTanhFunction : public torch::autograd::Function<MaxPoolTanhFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               int64_t kernel) {
    auto [output, picks] = MaxPoolTanhNchwForward(input, kernel);
    context->save_for_backward({output, picks});
    context->saved_data["kernel"] = kernel;
    return output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const variable_list saved = context->get_saved_variables();
    const torch::Tensor grad_input = MaxPoolTanhNchwBackward(grad_outputs[0], saved[0], saved[1],
                                                             context->saved_data["kernel"].toInt());
    return {grad_input, torch::Tensor()};
  }
};

}  // namespace
#endif  // TRAIND_HAVE_CUDA_KERNELS

torch::Tensor MaxPoolThenTanh(const torch::Tensor& input, MaxPool2dImpl& pool) {
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (OwnCudaKernelsEnabled() &&
      MaxPoolTanhNchwSupports(input, pool.kernel(), pool.stride(), pool.padding())) {
    if (torch::GradMode::is_enabled() && input.requires_grad()) {
      return MaxPoolTanhFunction::apply(input, pool.kernel());
    }
    return MaxPoolTanhNchwForward(input, pool.kernel()).first;
  }
#endif
  return torch::tanh(pool.forward(input));
}

}  // namespace traind
