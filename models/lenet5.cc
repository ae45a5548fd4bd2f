#include "models/lenet5.h"

#include "models/max_pool.h"

namespace traind {

namespace nn = torch::nn;

LeNet5Impl::LeNet5Impl(int64_t in_channels, int64_t num_classes) {
  features_ = register_module(
      "features",
      nn::Sequential(nn::Conv2d(nn::Conv2dOptions(in_channels, 6, 5)),
                     MaxPool2d(/*kernel=*/2, /*stride=*/2), nn::Tanh(),
                     nn::Conv2d(nn::Conv2dOptions(6, 16, 5)),
                     MaxPool2d(/*kernel=*/2, /*stride=*/2), nn::Tanh()));
  classifier_ = register_module(
      "classifier", nn::Sequential(nn::Linear(16 * 5 * 5, 120), nn::Tanh(), nn::Linear(120, 84),
                                   nn::Tanh(), nn::Linear(84, num_classes)));
}

torch::Tensor LeNet5Impl::forward(torch::Tensor x) {
  x = features_->forward(x);
  return classifier_->forward(torch::flatten(x, 1));
}

}  // namespace traind
