#include "engine/cuda_graph_step.h"

#include "absl/strings/str_cat.h"

#if defined(TRAIND_HAVE_CUDA) && TORCH_VERSION_MAJOR >= 2
#define TRAIND_HAVE_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "engine/loss.h"
#include "engine/mixed_precision.h"
#endif

namespace traind {

#ifdef TRAIND_HAVE_CUDA_GRAPHS
namespace {

class GraphStep : public CudaGraphTrainStep {
 public:
  GraphStep(torch::nn::AnyModule model, const trainer::v1::JobSpec& spec,
            const torch::Device& device)
      : model_(std::move(model)),
        device_(device),
        amp_(spec.amp()),
        loss_kind_(LossKindFromName(spec.loss())),
        adamw_(spec.optimizer() == "adamw"),
        lr_(spec.learning_rate()),
        weight_decay_(spec.has_weight_decay() ? spec.weight_decay() : (adamw_ ? 1e-2 : 0.0)) {}

  absl::Status Capture(int64_t batch_size, const torch::Tensor& sample,
                       const torch::Tensor& label_sample) {
    auto floats = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
    std::vector<int64_t> shape = {batch_size};
    for (int64_t d : sample.sizes()) shape.push_back(d);
    images_ = torch::zeros(shape, floats);
    std::vector<int64_t> label_shape = {batch_size};
    for (int64_t d : label_sample.sizes()) label_shape.push_back(d);
    labels_ = torch::zeros(label_shape, floats.dtype(label_sample.scalar_type()));
    loss_ = torch::zeros({}, floats);
    for (torch::Tensor& p : model_.ptr()->parameters()) {
      if (!p.requires_grad()) continue;
      params_.push_back(p);
      exp_avgs_.push_back(torch::zeros_like(p));
      exp_avg_sqs_.push_back(torch::zeros_like(p));
      steps_.push_back(torch::zeros({}, floats));
    }
    // Warm-up runs the real step (allocations, cuDNN/cuBLAS choices) before capture; its effect
    // on the weights, the optimizer state and batch-norm statistics is undone afterwards.
    std::vector<torch::Tensor> saved;
    for (const auto& t : model_.ptr()->parameters()) saved.push_back(t.detach().clone());
    std::vector<torch::Tensor> saved_buffers;
    for (const auto& t : model_.ptr()->buffers()) saved_buffers.push_back(t.detach().clone());

    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device_.index());
    side.synchronize();
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 3; ++i) Step();
      side.synchronize();
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      graph_->capture_begin();
      Step();
      graph_->capture_end();
    }
    side.synchronize();
    torch::NoGradGuard no_grad;
    auto params = model_.ptr()->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
    auto buffers = model_.ptr()->buffers();
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved_buffers[i]);
    for (auto& t : exp_avgs_) t.zero_();
    for (auto& t : exp_avg_sqs_) t.zero_();
    for (auto& t : steps_) t.zero_();
    torch::cuda::synchronize(device_.index());
    return absl::OkStatus();
  }

  torch::Tensor Run(const torch::Tensor& images, const torch::Tensor& labels) override {
    images_.copy_(images, /*non_blocking=*/true);
    labels_.copy_(labels, /*non_blocking=*/true);
    graph_->replay();
    return loss_;
  }

 private:
  // One step, written with in-place updates of fixed buffers only, so it can be replayed.
  // Gradients are set to none before backward, so backward allocates them — inside the graph's
  // memory pool during capture, at the same addresses on every replay. (Zeroing buffers we hold
  // would not work: autograd replaces a .grad it sees shared instead of adding into it.)
  void Step() {
    for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();
    torch::Tensor loss;
    {
      AutocastScope autocast(device_, amp_);
      loss = ComputeLoss(loss_kind_, model_.forward(images_), labels_);
    }
    loss.backward();
    std::vector<torch::Tensor> grads;
    for (const torch::Tensor& p : params_) grads.push_back(p.grad());
    constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
    // The fused kernels read the step count but do not advance it (torch.optim does it first).
    at::_foreach_add_(steps_, 1);
    if (adamw_) {
      at::_fused_adamw_(params_, grads, exp_avgs_, exp_avg_sqs_, {}, steps_, lr_, kBeta1, kBeta2,
                        weight_decay_, kEps, false, false);
    } else {
      at::_fused_adam_(params_, grads, exp_avgs_, exp_avg_sqs_, {}, steps_, lr_, kBeta1, kBeta2,
                       weight_decay_, kEps, false, false);
    }
    loss_.copy_(loss.detach());
  }

  torch::nn::AnyModule model_;
  const torch::Device device_;
  const std::string amp_;
  const LossKind loss_kind_;
  const bool adamw_;
  const double lr_;
  const double weight_decay_;
  torch::Tensor images_, labels_, loss_;
  std::vector<torch::Tensor> params_, exp_avgs_, exp_avg_sqs_, steps_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace
#endif

absl::StatusOr<std::unique_ptr<CudaGraphTrainStep>> CudaGraphTrainStep::Create(
    torch::nn::AnyModule model, const trainer::v1::JobSpec& spec, const torch::Device& device,
    int64_t batch_size, const torch::Tensor& sample, const torch::Tensor& label_sample) {
#ifdef TRAIND_HAVE_CUDA_GRAPHS
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError("cuda_graph: only on cuda devices");
  }
  auto step = std::make_unique<GraphStep>(std::move(model), spec, device);
  if (absl::Status s = step->Capture(batch_size, sample, label_sample); !s.ok()) return s;
  return std::unique_ptr<CudaGraphTrainStep>(std::move(step));
#else
  (void)model, (void)spec, (void)device, (void)batch_size, (void)sample, (void)label_sample;
  return absl::UnimplementedError(
      "cuda_graph: this traind was built without CUDA graphs (needs LibTorch 2.x with CUDA)");
#endif
}

}  // namespace traind
