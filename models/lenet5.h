// LeNet-5 exactly as the reference benchmark scripts build it: 32x32 input,
// Conv 6@5x5 -> Tanh -> MaxPool2 -> Conv 16@5x5 -> Tanh -> MaxPool2 -> FC 400-120-84-classes, Tanh.
// Each Tanh runs after its pooling instead: tanh is increasing, so max(tanh(a), tanh(b)) is
// tanh(max(a, b)): both orders compute the same function and gradient (the pooling picks the same
// element, unless rounding makes tanh of two different inputs equal), but this one takes tanh of
// a quarter of the elements. Off the CPU each pooling and its Tanh run as one (MaxPoolThenTanh,
// models/max_pool_tanh.h). The parameters keep their names (features.0, features.3,
// classifier.0/2/4), so checkpoints are unchanged.
#ifndef TRAIND_MODELS_LENET5_H_
#define TRAIND_MODELS_LENET5_H_

#include <torch/torch.h>

#include "models/max_pool.h"

namespace traind {

class LeNet5Impl : public torch::nn::Module {
 public:
  LeNet5Impl(int64_t in_channels, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  MaxPool2d pool1_{nullptr}, pool2_{nullptr};
  torch::nn::Sequential features_{nullptr};  // conv1_, pool1_, Tanh, conv2_, pool2_, Tanh
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(LeNet5);

}  // namespace traind

#endif  // TRAIND_MODELS_LENET5_H_
