#include "models/resnet18.h"

namespace traind {

namespace nn = torch::nn;

namespace {
nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
}
}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t out_channels, int64_t stride) {
  conv1_ = register_module("conv1", Conv(in_channels, out_channels, 3, stride, 1));
  bn1_ = register_module("bn1", BatchNorm2d(out_channels, /*relu=*/true));
  conv2_ = register_module("conv2", Conv(out_channels, out_channels, 3, 1, 1));
  bn2_ = register_module("bn2", BatchNorm2d(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    downsample_ = register_module(
        "downsample",
        nn::Sequential(Conv(in_channels, out_channels, 1, stride, 0), BatchNorm2d(out_channels)));
  }
}

torch::Tensor BasicBlockImpl::forward(torch::Tensor x) {
  torch::Tensor out = bn1_->forward(conv1_->forward(x));  // with its ReLU
  const torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
  return bn2_->ForwardAddRelu(conv2_->forward(out), identity);
}

TwinActivation BasicBlockImpl::ForwardTwin(const TwinActivation& x) {
  torch::Tensor out = bn1_->forward(conv1_->forward(x.main));  // with its ReLU
  const torch::Tensor identity = downsample_ ? downsample_->forward(x.shortcut) : x.shortcut;
  return bn2_->ForwardAddReluTwin(conv2_->forward(out), identity);
}

ResNet18Impl::ResNet18Impl(int64_t in_channels, int64_t num_classes, bool cifar_stem) {
  stem_conv_ = cifar_stem ? Conv(in_channels, 64, 3, 1, 1) : Conv(in_channels, 64, 7, 2, 3);
  stem_norm_ = BatchNorm2d(64, /*relu=*/true);
  // nn::Identity holds the place of the batch norm's ReLU (checkpoint names stay the same).
  stem_ = nn::Sequential(stem_conv_, stem_norm_, nn::Identity());
  if (!cifar_stem) {
    stem_pool_ = MaxPool2d(/*kernel=*/3, /*stride=*/2, /*padding=*/1);
    stem_->push_back(stem_pool_);
  }
  register_module("stem", stem_);
  layers_ = nn::Sequential();
  int64_t channels = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    const int64_t stride = width == 64 ? 1 : 2;
    layers_->push_back(BasicBlock(channels, width, stride));
    layers_->push_back(BasicBlock(width, width, 1));
    channels = width;
  }
  register_module("layers", layers_);
  fc_ = register_module("fc", nn::Linear(512, num_classes));
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    }
  }
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  // The stem's batch norm pools as it writes (BatchNorm2d::ForwardMaxPool): its full-size output
  // is the network's largest activation. Every block's input feeds its convolution and its
  // shortcut: as twins (TwinActivation) where the batch norm that made it is fused with a pool or
  // a residual add, so that the two gradients are added in its backward rather than in a pass of
  // their own (the CIFAR stem's plain batch norm gives one tensor).
  TwinActivation twins;
  if (stem_pool_) {
    twins = stem_norm_->ForwardMaxPoolTwin(stem_conv_->forward(x), *stem_pool_);
  } else {
    x = stem_->forward(x);
    twins = {x, x};
  }
  for (const auto& child : layers_->children()) {
    auto* block = child->as<BasicBlockImpl>();
    TORCH_CHECK(block != nullptr, "ResNet18: its layers are BasicBlocks");
    twins = block->ForwardTwin(twins);
  }
  x = torch::adaptive_avg_pool2d(twins.main, {1, 1});
  return fc_->forward(torch::flatten(x, 1));
}

}  // namespace traind
