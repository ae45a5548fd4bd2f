#include "models/lenet5.h"

#include "models/max_pool_tanh.h"

namespace traind {

namespace nn = torch::nn;

namespace {
constexpr size_t kSecondConvolution = 3;  // its index in `features`
}  // namespace

LeNet5Impl::LeNet5Impl(int64_t in_channels, int64_t num_classes) {
  // The second convolution draws its initial weights first: these layers used to be built as
  // `Sequential`'s arguments, which GCC evaluates right to left, and a seed keeps giving the
  // weights it gave then (the LeNet5 results in docs/benchmarks-history.md and the tests'
  // tolerances were measured with them).
  conv2_ = nn::Conv2d(nn::Conv2dOptions(6, 16, 5));
  conv1_ = nn::Conv2d(nn::Conv2dOptions(in_channels, 6, 5));
  pool1_ = MaxPool2d(/*kernel=*/2, /*stride=*/2);
  pool2_ = MaxPool2d(/*kernel=*/2, /*stride=*/2);
  features_ = register_module(
      "features", nn::Sequential(conv1_, pool1_, nn::Tanh(), conv2_, pool2_, nn::Tanh()));
  classifier_ = register_module(
      "classifier", nn::Sequential(nn::Linear(16 * 5 * 5, 120), nn::Tanh(), nn::Linear(120, 84),
                                   nn::Tanh(), nn::Linear(84, num_classes)));
}

torch::Tensor LeNet5Impl::forward(torch::Tensor x) {
  if (!x.is_cpu()) {
    x = MaxPoolThenTanh(conv1_->forward(x), *pool1_);
    x = MaxPoolThenTanh(conv2_->forward(x), *pool2_);
  } else {
    // oneDNN's backward of the second convolution (6 channels in) is ~1.5x faster on channels_last
    // tensors; the first one's is not (one channel in), and traind's NCHW pooling of its output
    // beats ATen's NHWC one. So only the second convolution's input is made channels_last (its
    // output, pooled by ATen, then is too): one LeNet5 epoch at batch 64 on the 2-core machine
    // took ~6% less (docs/benchmarks-history.md).
    size_t layer = 0;
    for (torch::nn::AnyModule& module : *features_) {
      if (layer++ == kSecondConvolution) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
      x = module.forward(x);
    }
  }
  return classifier_->forward(torch::flatten(x, 1));
}

}  // namespace traind
