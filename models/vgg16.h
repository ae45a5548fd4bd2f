// VGG16 with batch norm: torchvision's vgg16_bn topology (13 conv 3x3 + BN + ReLU in five stages,
// adaptive average pool to 7x7, classifier 25088-4096-4096-classes with dropout). Works at 32x32
// (CIFAR-sized; the 1x1 map is pooled up to 7x7 as torchvision does, folded into the first
// classifier layer's weight) and at 224x224.
#ifndef TRAIND_MODELS_VGG16_H_
#define TRAIND_MODELS_VGG16_H_

#include <torch/torch.h>

namespace traind {

class Vgg16Impl : public torch::nn::Module {
 public:
  Vgg16Impl(int64_t in_channels, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  // The classifier on the flattened features; `pool_folded`: x is the 1x1 features unpooled, and
  // the first layer sums its weight over the pool's 49 copies (see the .cc).
  torch::Tensor Classify(torch::Tensor x, bool pool_folded);
  torch::nn::Sequential features_{nullptr};
  torch::nn::AdaptiveAvgPool2d pool_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(Vgg16);

}  // namespace traind

#endif  // TRAIND_MODELS_VGG16_H_
