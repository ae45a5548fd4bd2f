#include "models/mlp.h"

namespace traind {

namespace nn = torch::nn;

MlpImpl::MlpImpl(int64_t num_features, int64_t num_classes) {
  layers_ = register_module(
      "layers",
      // Flatten first, as bench/reference's MLP: the state dict's names (layers.1.weight, ...)
      // are then the reference's, so downloaded weights load into it.
      nn::Sequential(nn::Flatten(), nn::Linear(nn::LinearOptions(num_features, 256).bias(false)),
                     nn::ReLU(), nn::Linear(nn::LinearOptions(256, 128).bias(false)), nn::ReLU(),
                     nn::Linear(nn::LinearOptions(128, 64).bias(false)), nn::ReLU(),
                     nn::Linear(64, num_classes)));
}

torch::Tensor MlpImpl::forward(torch::Tensor x) { return layers_->forward(x); }

}  // namespace traind
