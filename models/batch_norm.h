// The zoo's 2-d batch norm: LibTorch's BatchNorm2d (same parameters, buffers and names, so
// checkpoints are interchangeable; same defaults: eps 1e-5, momentum 0.1, affine, running
// statistics) with a faster CUDA path for training. In training mode on a CUDA channels_last
// bf16 or fp32 input (`--amp bf16` or no autocast) it runs traind's own NHWC kernels
// (models/cuda/batch_norm_nhwc.h): in bf16 where PyTorch would run its slower native ones,
// because cuDNN refuses bf16 batch norm; in fp32 to do the ReLU, and with ForwardAddRelu a
// ResNet block's residual add, in the same passes (ResNet-18 at 224 px: 1.13x cuDNN's batch norm
// with a separate add and ReLU, docs/benchmarks-history.md), and with ForwardMaxPool a ResNet
// stem's max pool in its output pass; the *Twin forms give an output that feeds two layers as twins
// whose gradients the backward adds as it loads them (TwinActivation). Every other case (fp16,
// eval mode, NCHW) goes to at::batch_norm as before.
// TRAIND_NATIVE_KERNELS=1 in the worker's environment turns the fused path off
// (models/own_kernels.h). With `relu`, the layer is batch norm then ReLU (in place), which the
// fused path does in the same passes. Not a subclass of torch::nn::BatchNorm2dImpl: that would
// not link, as LibTorch does not export the base template's virtual functions its vtable needs.
#ifndef TRAIND_MODELS_BATCH_NORM_H_
#define TRAIND_MODELS_BATCH_NORM_H_

#include <torch/torch.h>

#include <ostream>
#include <string>

#include "models/max_pool.h"

namespace traind {

// An activation that feeds two layers (a ResNet block's input: its first convolution and its
// shortcut) as two tensors over the same data. Where traind's fused batch norm made it, the two
// gradients reach that layer's backward apart and its first pass adds them as it loads them,
// which saves the pass in which autograd would add them (a full-size read, read and write);
// elsewhere both are the same tensor, and autograd adds as usual. The shortcut is an autograd view
// of the output: neither may be changed in place.
struct TwinActivation {
  torch::Tensor main, shortcut;
  // From a fused function's outputs: {output} or {output, twin}.
  static TwinActivation Of(const std::vector<torch::Tensor>& outputs);
};

class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t num_features, bool relu = false)
      : num_features_(num_features), relu_(relu) {
    reset();
  }
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  torch::Tensor forward(const torch::Tensor& input);
  // relu(batch norm of `input` + `residual`), the end of a ResNet block, for a layer made without
  // its own ReLU; the fused path does the addition and the ReLU in its output pass.
  torch::Tensor ForwardAddRelu(const torch::Tensor& input, const torch::Tensor& residual);
  // pool(forward(input)) for a layer made with its ReLU, a ResNet stem's end; the fused path
  // pools in its output pass, so the full-size activation is never stored, and both passes of
  // its backward gather the pooled gradient through the pool's picks (no full-size gradient is
  // stored either). The fused path takes stride 2 with windows up to 4 wide; other poolings run
  // as the two layers.
  torch::Tensor ForwardMaxPool(const torch::Tensor& input, MaxPool2dImpl& pool);
  // The two above for an output that feeds two layers (TwinActivation).
  TwinActivation ForwardAddReluTwin(const torch::Tensor& input, const torch::Tensor& residual);
  TwinActivation ForwardMaxPoolTwin(const torch::Tensor& input, MaxPool2dImpl& pool);

  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  TwinActivation AddRelu(const torch::Tensor& input, const torch::Tensor& residual, bool twin);
  TwinActivation ReluMaxPool(const torch::Tensor& input, MaxPool2dImpl& pool, bool twin);
  // Checks the input and, in training, counts the batch.
  void CountBatch(const torch::Tensor& input);
  bool FusedPathTakes(const torch::Tensor& input) const;
  // at::batch_norm (cuDNN's or PyTorch's native kernels), without the ReLU.
  torch::Tensor Unfused(const torch::Tensor& input);

  static constexpr double kEps = 1e-5;
  static constexpr double kMomentum = 0.1;
  int64_t num_features_;
  bool relu_;
};
TORCH_MODULE(BatchNorm2d);

// Whether a training-mode forward would take the fused path for this input.
bool UsesFusedBatchNorm(const torch::Tensor& input);

// Whether training `model` on `device` will take the fused path, for the job log before any input
// exists: it has a traind::BatchNorm2d, the kernels are built and on, and the activations will
// be CUDA bf16 (`amp` "bf16") or fp32 (`amp` "") in channels_last.
bool UsesFusedBatchNorm(const torch::nn::Module& model, const torch::Device& device,
                        const std::string& amp, bool channels_last);

}  // namespace traind

#endif  // TRAIND_MODELS_BATCH_NORM_H_
