#include "models/batch_norm.h"

#include <algorithm>

#include "models/own_kernels.h"

#ifdef TRAIND_HAVE_CUDA_KERNELS
#include "models/cuda/batch_norm_nhwc.h"
#endif

namespace traind {

#ifdef TRAIND_HAVE_CUDA_KERNELS
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class NhwcBatchNormFunction : public torch::autograd::Function<NhwcBatchNormFunction> {
 public:
  // With a `residual` (and `relu`): relu(batch_norm(input) + residual). Its backward needs the
  // output for the ReLU's mask, which is saved instead of the residual.
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               torch::Tensor running_mean, torch::Tensor running_var,
                               double momentum, double eps, bool relu,
                               const c10::optional<torch::Tensor>& residual) {
    const torch::Tensor added = residual.value_or(torch::Tensor());
    NhwcBatchNormForwardResult result = NhwcBatchNormForward(
        input, weight, bias, running_mean, running_var, momentum, eps, relu, added);
    context->save_for_backward({input, weight, result.mean, result.invstd, result.scale,
                                result.shift, added.defined() ? result.output : torch::Tensor()});
    context->saved_data["relu"] = relu;
    return result.output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const variable_list saved = context->get_saved_variables();
    // The gradient arrives in the output's layout in practice; make sure of it.
    const torch::Tensor grad = grad_outputs[0].contiguous(torch::MemoryFormat::ChannelsLast);
    NhwcBatchNormBackwardResult result =
        NhwcBatchNormBackward(grad, saved[0], saved[1], saved[2], saved[3], saved[4], saved[5],
                              context->saved_data["relu"].toBool(), saved[6]);
    return {result.grad_input, result.grad_weight, result.grad_bias,
            torch::Tensor(),   torch::Tensor(),    torch::Tensor(),
            torch::Tensor(),   torch::Tensor(),    result.grad_residual};
  }
};

// max_pool2d(relu(batch_norm(input))) in the batch norm's passes. Saves the picks, not the
// pooled output: the backward recomputes the ReLU's mask from the input.
class NhwcBatchNormReluMaxPoolFunction
    : public torch::autograd::Function<NhwcBatchNormReluMaxPoolFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               torch::Tensor running_mean, torch::Tensor running_var,
                               double momentum, double eps, int64_t kernel, int64_t stride,
                               int64_t padding) {
    const MaxPoolGeometry pool{kernel, stride, padding};
    NhwcBatchNormForwardResult result = NhwcBatchNormReluMaxPoolForward(
        input, weight, bias, running_mean, running_var, momentum, eps, pool);
    context->save_for_backward(
        {input, weight, result.mean, result.invstd, result.scale, result.shift, result.picks});
    context->saved_data["kernel"] = kernel;
    context->saved_data["stride"] = stride;
    context->saved_data["padding"] = padding;
    return result.output;
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const variable_list saved = context->get_saved_variables();
    const MaxPoolGeometry pool{context->saved_data["kernel"].toInt(),
                               context->saved_data["stride"].toInt(),
                               context->saved_data["padding"].toInt()};
    NhwcBatchNormBackwardResult result =
        NhwcBatchNormReluMaxPoolBackward(grad_outputs[0], saved[6], saved[0], saved[1], saved[2],
                                         saved[3], saved[4], saved[5], pool);
    return {result.grad_input, result.grad_weight, result.grad_bias, torch::Tensor(),
            torch::Tensor(),   torch::Tensor(),    torch::Tensor(),  torch::Tensor(),
            torch::Tensor(),   torch::Tensor()};
  }
};

}  // namespace
#endif  // TRAIND_HAVE_CUDA_KERNELS

bool UsesFusedBatchNorm(const torch::Tensor& input) {
#ifdef TRAIND_HAVE_CUDA_KERNELS
  return OwnCudaKernelsEnabled() && NhwcBatchNormSupports(input);
#else
  (void)input;
  return false;
#endif
}

bool UsesFusedBatchNorm(const torch::nn::Module& model, const torch::Device& device,
                        const std::string& amp, bool channels_last) {
  // fp16 autocast gives the kernels fp16 activations, which they do not take.
  if (!OwnCudaKernelsEnabled() || !device.is_cuda() || !(amp.empty() || amp == "bf16") ||
      !channels_last) {
    return false;
  }
  for (const auto& module : model.modules(/*include_self=*/true)) {
    if (module->as<BatchNorm2dImpl>() != nullptr) return true;
  }
  return false;
}

void BatchNorm2dImpl::reset() {
  // LibTorch's registration order and initial values.
  weight = register_parameter("weight", torch::ones({num_features_}));
  bias = register_parameter("bias", torch::zeros({num_features_}));
  running_mean = register_buffer("running_mean", torch::zeros({num_features_}));
  running_var = register_buffer("running_var", torch::ones({num_features_}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
}

void BatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "traind::BatchNorm2d(" << num_features_ << ", eps=" << kEps
         << ", momentum=" << kMomentum << (relu_ ? ", relu" : "") << ")";
}

torch::Tensor BatchNorm2dImpl::forward(const torch::Tensor& input) {
  CountBatch(input);
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (FusedPathTakes(input)) {
    return NhwcBatchNormFunction::apply(input, weight, bias, running_mean, running_var, kMomentum,
                                        kEps, relu_, c10::nullopt);
  }
#endif
  torch::Tensor output = Unfused(input);
  // In place is safe: batch norm's backward needs its input, not its output.
  return relu_ ? torch::relu_(output) : output;
}

torch::Tensor BatchNorm2dImpl::ForwardAddRelu(const torch::Tensor& input,
                                              const torch::Tensor& residual) {
  TORCH_CHECK(!relu_, "BatchNorm2d: ForwardAddRelu is for a batch norm without its own ReLU");
  TORCH_CHECK(residual.sizes() == input.sizes(), "BatchNorm2d: the residual's size ",
              residual.sizes(), " is not the input's ", input.sizes());
  CountBatch(input);
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (FusedPathTakes(input) && UsesFusedBatchNorm(residual) &&
      residual.scalar_type() == input.scalar_type() && residual.device() == input.device()) {
    return NhwcBatchNormFunction::apply(input, weight, bias, running_mean, running_var, kMomentum,
                                        kEps, /*relu=*/true, residual);
  }
#endif
  // In place on the sum is safe: the addition's backward needs neither its inputs nor its output.
  torch::Tensor sum = Unfused(input) + residual;
  return torch::relu_(sum);
}

torch::Tensor BatchNorm2dImpl::ForwardMaxPool(const torch::Tensor& input, MaxPool2dImpl& pool) {
  TORCH_CHECK(relu_, "BatchNorm2d: ForwardMaxPool is for a batch norm with its own ReLU");
#ifdef TRAIND_HAVE_CUDA_KERNELS
  const MaxPoolGeometry geometry{pool.kernel(), pool.stride(), pool.padding()};
  if (FusedPathTakes(input) && NhwcBatchNormReluMaxPoolSupports(input, geometry)) {
    CountBatch(input);
    return NhwcBatchNormReluMaxPoolFunction::apply(input, weight, bias, running_mean, running_var,
                                                   kMomentum, kEps, geometry.kernel,
                                                   geometry.stride, geometry.padding);
  }
#endif
  return pool.forward(forward(input));
}

void BatchNorm2dImpl::CountBatch(const torch::Tensor& input) {
  TORCH_CHECK(input.dim() == 4, "BatchNorm2d: expected 4D input (got ", input.dim(), "D input)");
  if (!is_training()) return;
  TORCH_CHECK(input.numel() / std::max<int64_t>(1, input.size(1)) > 1,
              "Expected more than 1 value per channel when training, got input size ",
              input.sizes());
  torch::NoGradGuard no_grad;
  num_batches_tracked += 1;
}

bool BatchNorm2dImpl::FusedPathTakes(const torch::Tensor& input) const {
  return is_training() && weight.scalar_type() == torch::kFloat &&
         running_mean.scalar_type() == torch::kFloat && UsesFusedBatchNorm(input);
}

torch::Tensor BatchNorm2dImpl::Unfused(const torch::Tensor& input) {
  return torch::batch_norm(input, weight, bias, running_mean, running_var, is_training(), kMomentum,
                           kEps, at::globalContext().userEnabledCuDNN());
}

}  // namespace traind
