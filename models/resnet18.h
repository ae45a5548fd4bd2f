// ResNet-18: torchvision's topology (BasicBlocks [2, 2, 2, 2], widths 64-128-256-512, adaptive
// average pool, one linear layer). `cifar_stem` swaps the 7x7/2 stem and max-pool for a 3x3/1
// stem, the usual choice for 32x32 images.
#ifndef TRAIND_MODELS_RESNET18_H_
#define TRAIND_MODELS_RESNET18_H_

#include <torch/torch.h>

#include "models/batch_norm.h"
#include "models/max_pool.h"

namespace traind {

class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride);
  torch::Tensor forward(torch::Tensor x);
  // The block on an input given as twins (the convolution takes `main`, the shortcut
  // `shortcut`), its output as twins for the next block.
  TwinActivation ForwardTwin(const TwinActivation& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // null when the shapes already match
};
TORCH_MODULE(BasicBlock);

class ResNet18Impl : public torch::nn::Module {
 public:
  ResNet18Impl(int64_t in_channels, int64_t num_classes, bool cifar_stem);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential stem_{nullptr};  // holds the stem's layers (and their checkpoint names)
  torch::nn::Conv2d stem_conv_{nullptr};
  BatchNorm2d stem_norm_{nullptr};
  MaxPool2d stem_pool_{nullptr};  // null with the CIFAR stem
  torch::nn::Sequential layers_{nullptr};
  torch::nn::Linear fc_{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace traind

#endif  // TRAIND_MODELS_RESNET18_H_
