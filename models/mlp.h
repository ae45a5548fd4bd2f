// The reference scripts' multilayer perceptron: flatten -> 784-256-128-64-classes with ReLU;
// hidden layers have no bias (as in the reference), the output layer does.
#ifndef TRAIND_MODELS_MLP_H_
#define TRAIND_MODELS_MLP_H_

#include <torch/torch.h>

namespace traind {

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t num_features, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential layers_{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace traind

#endif  // TRAIND_MODELS_MLP_H_
