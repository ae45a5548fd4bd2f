#include "models/vgg16.h"

#include "models/batch_norm.h"
#include "models/max_pool.h"

namespace traind {

namespace nn = torch::nn;

Vgg16Impl::Vgg16Impl(int64_t in_channels, int64_t num_classes) {
  constexpr int kMaxPool = 0;
  const int config[] = {64,       64,  kMaxPool, 128, 128,      kMaxPool, 256, 256, 256,
                        kMaxPool, 512, 512,      512, kMaxPool, 512,      512, 512, kMaxPool};
  nn::Sequential features;
  int64_t channels = in_channels;
  for (int width : config) {
    if (width == kMaxPool) {
      features->push_back(MaxPool2d(/*kernel=*/2, /*stride=*/2));
      continue;
    }
    features->push_back(nn::Conv2d(nn::Conv2dOptions(channels, width, 3).padding(1)));
    features->push_back(BatchNorm2d(width, /*relu=*/true));
    // The ReLU is the batch norm's; this placeholder keeps the layer indices, and so the
    // parameter names of checkpoints, those of torchvision's vgg16_bn.
    features->push_back(nn::Identity());
    channels = width;
  }
  features_ = register_module("features", features);
  pool_ = register_module("avgpool", nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({7, 7})));
  classifier_ = register_module(
      "classifier",
      nn::Sequential(nn::Linear(512 * 7 * 7, 4096), nn::ReLU(nn::ReLUOptions(true)),
                     nn::Dropout(0.5), nn::Linear(4096, 4096), nn::ReLU(nn::ReLUOptions(true)),
                     nn::Dropout(0.5), nn::Linear(4096, num_classes)));
  // torchvision's initialisation: Kaiming for convs, N(0, 0.01) for linears.
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      nn::init::zeros_(conv->bias);
      // Every convolution feeds a batch norm that, in training, subtracts the batch mean of its
      // input: a per-channel bias moves that mean by itself and changes no output, so its
      // gradient is zero in exact arithmetic (and rounding noise in practice). Frozen, its
      // gradient is not computed (one reduction over the activations per convolution a step) and
      // its value, zero or a checkpoint's, stays as given; it stays a parameter, so checkpoints
      // keep torchvision's names and the optimizer's parameter list is unchanged.
      conv->bias.set_requires_grad(false);
    } else if (auto* linear = module->as<nn::Linear>()) {
      nn::init::normal_(linear->weight, 0, 0.01);
      nn::init::zeros_(linear->bias);
    }
  }
}

torch::Tensor Vgg16Impl::forward(torch::Tensor x) {
  x = features_->forward(x);
  // At 32 px the features end at 1x1, and the 7x7 adaptive pool only copies each channel 49
  // times: the first classifier product then equals one with the weight's 49 copies summed (a
  // 512-wide product instead of a 25,088-wide one, forward and backward). Every weight still
  // gets its gradient (the same for all 49 copies, as through the pool), so checkpoints and the
  // optimizer see the same model. Worth it in fp32 (VGG16 at 32 px, batch 128 on the H200: 0.412
  // -> 0.340 s an epoch), not in bf16, where the wide product runs on tensor cores and costs less
  // than the fold's passes over the fp32 weight (0.221 -> 0.247 s): docs/benchmarks-history.md.
  const bool fold_pool = x.size(2) == 1 && x.size(3) == 1 && x.scalar_type() == torch::kFloat;
  if (!fold_pool) x = pool_->forward(x);
  return Classify(torch::flatten(x, 1), /*pool_folded=*/fold_pool);
}

torch::Tensor Vgg16Impl::Classify(torch::Tensor x, bool pool_folded) {
  bool first = true;
  for (auto& layer : *classifier_) {
    auto* linear = layer.ptr()->as<nn::Linear>();
    if (linear == nullptr) {
      x = layer.forward(x);
      continue;
    }
    torch::Tensor weight = linear->weight;
    if (first && pool_folded) {
      weight = weight.view({weight.size(0), x.size(1), -1}).sum(2);
    }
    first = false;
    // On CUDA each Linear runs as a product and then a bias add, not as LibTorch's addmm: addmm
    // hands the bias to cuBLASLt's epilogue, and for the first layer's fp32 shape (batch x
    // 25,088 by 25,088 x 4,096) the kernel that comes with it was a slower one (CUTLASS SIMT
    // where a plain product gets cuBLAS's tensor-op kernel). VGG16 at 32 px, fp32, batch 128 on
    // the H200: 0.434 -> 0.412 s an epoch; bf16 the same either way (docs/benchmarks-history.md).
    // In place is safe: the product's backward needs its inputs, not its output.
    x = x.is_cuda() ? torch::mm(x, weight.t()).add_(linear->bias)
                    : torch::nn::functional::linear(x, weight, linear->bias);
  }
  return x;
}

}  // namespace traind
