#include "engine/device_rehearsal.h"

#include <memory>
#include <vector>

#include "engine/optimizer_factory.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#define TRAIND_REHEARSE_GRAPHS 1
#endif

namespace traind {

namespace nn = torch::nn;

void RehearseTrainingStep(const torch::Device& device) {
  if (!device.is_cuda()) return;
  const auto on = torch::TensorOptions().device(device);
  // The dataset's conversion (data/dataset.cc): bytes to floats, resized, normalised, gathered.
  torch::Tensor bytes = torch::full({16, 1, 28, 28}, 128, on.dtype(torch::kUInt8));
  torch::Tensor images = nn::functional::interpolate(bytes.to(torch::kFloat32).div_(255.0),
                                                     nn::functional::InterpolateFuncOptions()
                                                         .size(std::vector<int64_t>{32, 32})
                                                         .mode(torch::kBilinear)
                                                         .align_corners(false));
  images = images.sub(0.5).div_(0.5).contiguous();
  torch::Tensor labels = torch::arange(16, on.dtype(torch::kInt64)).remainder(10);
  torch::Tensor order = torch::randperm(16, torch::kInt64).to(device);
  images = images.index_select(0, order);
  labels = labels.index_select(0, order);

  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8),
                     nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                     nn::Conv2d(nn::Conv2dOptions(8, 16, 5)), nn::Tanh(),
                     nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(),
                     nn::Linear(16 * 6 * 6, 32), nn::ReLU(), nn::Linear(32, 10));
  net->to(device);
  std::unique_ptr<torch::optim::Optimizer> adam =
      CreateFusedAdam(net->parameters(), 1e-3, 0.0, /*decoupled=*/false);
  auto step = [&] {
    adam->zero_grad();
    torch::Tensor loss = nn::functional::cross_entropy(
        net->forward(images), labels,
        nn::functional::CrossEntropyFuncOptions().label_smoothing(0.1));
    loss.backward();
    adam->step();
    return loss;
  };
  step();
#ifdef TRAIND_REHEARSE_GRAPHS
  {
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device.index());
    c10::cuda::CUDAStreamGuard guard(side);
    torch::Tensor a = torch::ones({64}, on), b;
    at::cuda::CUDAGraph graph;
    graph.capture_begin();
    b = a.mul(2).add_(1);
    graph.capture_end();
    graph.replay();
    side.synchronize();
  }
#endif
  step();
  {
    torch::NoGradGuard no_grad;
    net->eval();
    torch::Tensor logits = net->forward(images);
    (void)nn::functional::cross_entropy(
        logits, labels, nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
        .item<float>();
    (void)logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  torch::cuda::synchronize(device.index());
}

}  // namespace traind
