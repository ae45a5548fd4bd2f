// LeNet-5 exactly as the reference benchmark scripts build it: 32x32 input,
// Conv 6@5x5 -> Tanh -> MaxPool2 -> Conv 16@5x5 -> Tanh -> MaxPool2 -> FC 400-120-84-classes, Tanh.
#ifndef TRAIND_MODELS_LENET5_H_
#define TRAIND_MODELS_LENET5_H_

#include <torch/torch.h>

namespace traind {

class LeNet5Impl : public torch::nn::Module {
 public:
  LeNet5Impl(int64_t in_channels, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(LeNet5);

}  // namespace traind

#endif  // TRAIND_MODELS_LENET5_H_
