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

// The output, and with `twin` a second tensor over the same data (TwinActivation's shortcut),
// whose gradient then arrives undefined where it is unused, not as a tensor of zeros that the
// backward would read.
variable_list Outputs(AutogradContext* context, const torch::Tensor& output, bool twin) {
  if (!twin) return {output};
  context->set_materialize_grads(false);
  return {output, output.alias()};
}

// The output's gradient and its twin's, in the layout the kernels read (the gradients arrive in
// the output's in practice; make sure of it); the first defined where either is.
std::pair<torch::Tensor, torch::Tensor> OutputGradients(const variable_list& grad_outputs) {
  torch::Tensor grad = grad_outputs[0];
  torch::Tensor twin = grad_outputs.size() > 1 ? grad_outputs[1] : torch::Tensor();
  if (!grad.defined()) std::swap(grad, twin);
  const auto laid_out = [](const torch::Tensor& t) {
    return t.defined() ? t.contiguous(torch::MemoryFormat::ChannelsLast) : t;
  };
  return {laid_out(grad), laid_out(twin)};
}

class NhwcBatchNormFunction : public torch::autograd::Function<NhwcBatchNormFunction> {
 public:
  // With a `residual` (and `relu`): relu(batch_norm(input) + residual). Its backward needs the
  // output for the ReLU's mask, which is saved instead of the residual. With `twin`, a second
  // output over the same data (see Outputs).
  static variable_list forward(AutogradContext* context, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               torch::Tensor running_mean, torch::Tensor running_var,
                               double momentum, double eps, bool relu,
                               const c10::optional<torch::Tensor>& residual, bool twin) {
    const torch::Tensor added = residual.value_or(torch::Tensor());
    NhwcBatchNormForwardResult result = NhwcBatchNormForward(
        input, weight, bias, running_mean, running_var, momentum, eps, relu, added);
    context->save_for_backward({input, weight, result.mean, result.invstd, result.scale,
                                result.shift, added.defined() ? result.output : torch::Tensor()});
    context->saved_data["relu"] = relu;
    return Outputs(context, result.output, twin);
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const auto [grad, twin] = OutputGradients(grad_outputs);
    if (!grad.defined()) return variable_list(10);
    const variable_list saved = context->get_saved_variables();
    NhwcBatchNormBackwardResult result =
        NhwcBatchNormBackward(grad, saved[0], saved[1], saved[2], saved[3], saved[4], saved[5],
                              context->saved_data["relu"].toBool(), saved[6], twin);
    variable_list grads(10);
    grads[0] = result.grad_input;
    grads[1] = result.grad_weight;
    grads[2] = result.grad_bias;
    grads[8] = result.grad_residual;
    return grads;
  }
};

// max_pool2d(relu(batch_norm(input))) in the batch norm's passes. Saves the picks, not the
// pooled output: the backward recomputes the ReLU's mask from the input. With `twin`, a second
// output over the same data (see Outputs).
class NhwcBatchNormReluMaxPoolFunction
    : public torch::autograd::Function<NhwcBatchNormReluMaxPoolFunction> {
 public:
  static variable_list forward(AutogradContext* context, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               torch::Tensor running_mean, torch::Tensor running_var,
                               double momentum, double eps, int64_t kernel, int64_t stride,
                               int64_t padding, bool twin) {
    const MaxPoolGeometry pool{kernel, stride, padding};
    NhwcBatchNormForwardResult result = NhwcBatchNormReluMaxPoolForward(
        input, weight, bias, running_mean, running_var, momentum, eps, pool);
    context->save_for_backward(
        {input, weight, result.mean, result.invstd, result.scale, result.shift, result.picks});
    context->saved_data["kernel"] = kernel;
    context->saved_data["stride"] = stride;
    context->saved_data["padding"] = padding;
    return Outputs(context, result.output, twin);
  }

  static variable_list backward(AutogradContext* context, variable_list grad_outputs) {
    const auto [grad, twin] = OutputGradients(grad_outputs);
    if (!grad.defined()) return variable_list(11);
    const variable_list saved = context->get_saved_variables();
    const MaxPoolGeometry pool{context->saved_data["kernel"].toInt(),
                               context->saved_data["stride"].toInt(),
                               context->saved_data["padding"].toInt()};
    NhwcBatchNormBackwardResult result = NhwcBatchNormReluMaxPoolBackward(
        grad, saved[6], saved[0], saved[1], saved[2], saved[3], saved[4], saved[5], pool, twin);
    variable_list grads(11);
    grads[0] = result.grad_input;
    grads[1] = result.grad_weight;
    grads[2] = result.grad_bias;
    return grads;
  }
};

}  // namespace
#endif  // TRAIND_HAVE_CUDA_KERNELS

TwinActivation TwinActivation::Of(const std::vector<torch::Tensor>& outputs) {
  return {outputs[0], outputs.size() > 1 ? outputs[1] : outputs[0]};
}

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
                                        kEps, relu_, c10::nullopt, /*twin=*/false)[0];
  }
#endif
  torch::Tensor output = Unfused(input);
  // In place is safe: batch norm's backward needs its input, not its output.
  return relu_ ? torch::relu_(output) : output;
}

torch::Tensor BatchNorm2dImpl::ForwardAddRelu(const torch::Tensor& input,
                                              const torch::Tensor& residual) {
  return AddRelu(input, residual, /*twin=*/false).main;
}

TwinActivation BatchNorm2dImpl::ForwardAddReluTwin(const torch::Tensor& input,
                                                   const torch::Tensor& residual) {
  return AddRelu(input, residual, /*twin=*/true);
}

torch::Tensor BatchNorm2dImpl::ForwardMaxPool(const torch::Tensor& input, MaxPool2dImpl& pool) {
  return ReluMaxPool(input, pool, /*twin=*/false).main;
}

TwinActivation BatchNorm2dImpl::ForwardMaxPoolTwin(const torch::Tensor& input,
                                                   MaxPool2dImpl& pool) {
  return ReluMaxPool(input, pool, /*twin=*/true);
}

TwinActivation BatchNorm2dImpl::AddRelu(const torch::Tensor& input, const torch::Tensor& residual,
                                        bool twin) {
  TORCH_CHECK(!relu_, "BatchNorm2d: ForwardAddRelu is for a batch norm without its own ReLU");
  TORCH_CHECK(residual.sizes() == input.sizes(), "BatchNorm2d: the residual's size ",
              residual.sizes(), " is not the input's ", input.sizes());
  CountBatch(input);
#ifdef TRAIND_HAVE_CUDA_KERNELS
  if (FusedPathTakes(input) && UsesFusedBatchNorm(residual) &&
      residual.scalar_type() == input.scalar_type() && residual.device() == input.device()) {
    return TwinActivation::Of(NhwcBatchNormFunction::apply(input, weight, bias, running_mean,
                                                           running_var, kMomentum, kEps,
                                                           /*relu=*/true, residual, twin));
  }
#endif
  // In place on the sum is safe: the addition's backward needs neither its inputs nor its output.
  torch::Tensor sum = Unfused(input) + residual;
  torch::relu_(sum);
  return {sum, sum};
}

TwinActivation BatchNorm2dImpl::ReluMaxPool(const torch::Tensor& input, MaxPool2dImpl& pool,
                                            bool twin) {
  TORCH_CHECK(relu_, "BatchNorm2d: ForwardMaxPool is for a batch norm with its own ReLU");
#ifdef TRAIND_HAVE_CUDA_KERNELS
  const MaxPoolGeometry geometry{pool.kernel(), pool.stride(), pool.padding()};
  if (FusedPathTakes(input) && NhwcBatchNormReluMaxPoolSupports(input, geometry)) {
    CountBatch(input);
    return TwinActivation::Of(NhwcBatchNormReluMaxPoolFunction::apply(
        input, weight, bias, running_mean, running_var, kMomentum, kEps, geometry.kernel,
        geometry.stride, geometry.padding, twin));
  }
#endif
  torch::Tensor pooled = pool.forward(forward(input));
  return {pooled, pooled};
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
